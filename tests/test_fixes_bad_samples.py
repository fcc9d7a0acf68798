"""fixes/bad_samples.py: safe decoding, skipping, collating, reporting, pre-scan."""
import io
import subprocess
import sys

import numpy as np
import pytest
import torch
from PIL import Image, UnidentifiedImageError

from conftest import REPO_ROOT, load_scenario_module
from fixes.bad_samples import (BadSample, CollatedBatch, SkipBadSamples, SkippedSamples,
                               TooManyBadSamples, collate_good_samples, load_rgb, scan_images)
from fixes.bad_samples import main as prescan_main

_corpus = load_scenario_module("02_corrupt_files", "_image_corpus")
UNREADABLE, write_corpus = _corpus.UNREADABLE, _corpus.write_corpus


def _save(path, image, fmt):
    image.save(path, fmt)
    return path


def _jpeg_bytes(size=(64, 48)):
    pixels = np.linspace(0, 255, size[0] * size[1] * 3).reshape(size[1], size[0], 3).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "JPEG")
    return out.getvalue()


def test_load_rgb_converts_grayscale_and_composites_transparency(tmp_path):
    gray = load_rgb(_save(tmp_path / "g.jpg", Image.new("L", (10, 6), 77), "JPEG"))
    assert gray.mode == "RGB" and gray.size == (10, 6)
    assert np.asarray(gray)[0, 0].tolist() == [77, 77, 77]
    rgba = Image.new("RGBA", (4, 4), (0, 0, 0, 0))       # fully transparent black
    rgba.putpixel((0, 0), (10, 20, 30, 255))
    rgb = np.asarray(load_rgb(_save(tmp_path / "a.png", rgba, "PNG")))
    assert rgb[0, 0].tolist() == [10, 20, 30]
    assert rgb[3, 3].tolist() == [255, 255, 255]        # plain convert("RGB") gives black here
    palette = Image.new("P", (4, 4), 1)
    palette.putpalette([0, 0, 0, 200, 0, 0] + [0] * 762)
    palette.info["transparency"] = 1
    assert np.asarray(load_rgb(_save(tmp_path / "p.png", palette, "PNG")))[0, 0].tolist() == [255, 255, 255]


def test_load_rgb_raises_on_unreadable_files_and_image_verify_misses_truncation(tmp_path):
    data = _jpeg_bytes(size=(200, 150))
    truncated = tmp_path / "t.jpg"
    truncated.write_bytes(data[: len(data) * 6 // 10])  # cut inside the compressed pixel data
    Image.open(truncated).verify()  # passes: verify() does not decode the pixels
    with pytest.raises(OSError, match="image file is truncated"):
        load_rgb(truncated)
    (tmp_path / "empty.jpg").write_bytes(b"")
    (tmp_path / "page.jpg").write_bytes(b"<html><body>404</body></html>")
    for name in ("empty.jpg", "page.jpg"):
        with pytest.raises(UnidentifiedImageError):
            load_rgb(tmp_path / name)


class Flaky(torch.utils.data.Dataset):
    """Samples 0..n-1; those in `bad` raise OSError, `buggy` raise TypeError."""

    def __init__(self, n, bad=(), buggy=()):
        self.n, self.bad, self.buggy = n, set(bad), set(buggy)

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        if index in self.bad:
            raise OSError(f"cannot read {index}")
        if index in self.buggy:
            raise TypeError("a bug, not bad data")
        return torch.tensor([index]), index


def test_skip_bad_samples_returns_markers_for_data_errors_only():
    sources = [f"file{i}.jpg" for i in range(4)]
    dataset = SkipBadSamples(Flaky(4, bad={1}, buggy={2}), sources=sources)
    assert len(dataset) == 4
    assert dataset[1] == BadSample(1, "file1.jpg", "OSError: cannot read 1")
    assert SkipBadSamples(Flaky(4, bad={1}))[1].source == "sample 1"
    with pytest.raises(TypeError, match="a bug"):
        dataset[2]


def test_collate_keeps_good_samples_and_survives_an_all_bad_batch():
    dataset = SkipBadSamples(Flaky(4, bad={1, 2}))
    mixed = collate_good_samples([dataset[0], dataset[1], dataset[3]])
    assert isinstance(mixed, CollatedBatch) and mixed.size == 3
    assert mixed.samples[1].tolist() == [0, 3]
    assert [bad.index for bad in mixed.skipped] == [1]
    empty = collate_good_samples([dataset[1], dataset[2]])
    assert empty.samples is None and len(empty.skipped) == 2


def _loader(dataset, **kwargs):
    return torch.utils.data.DataLoader(SkipBadSamples(dataset), batch_size=4,
                                       collate_fn=collate_good_samples, **kwargs)


def test_skipped_samples_yields_good_batches_and_reports_with_workers():
    skipped = SkippedSamples()
    loader = _loader(Flaky(12, bad={4, 5, 6, 7, 9}), num_workers=2, multiprocessing_context="fork")
    seen = [int(i) for _, indices in skipped.good_batches(loader) for i in indices]
    assert seen == [0, 1, 2, 3, 8, 10, 11]          # batch 4-7 was all bad: skipped, not an error
    assert len(skipped) == 5 and skipped.seen == 12
    assert [bad.index for bad in skipped] == [4, 5, 6, 7, 9]  # iterating gives the BadSamples, in order
    assert skipped.summary().splitlines()[0] == "skipped 5 of 12 samples that could not be loaded"
    assert "  sample 9: OSError: cannot read 9" in skipped.summary()


def test_skipped_samples_refuses_a_mostly_unreadable_dataset():
    skipped = SkippedSamples(max_fraction=0.25, min_seen=8)
    with pytest.raises(TooManyBadSamples, match="Check the data path"):
        list(skipped.good_batches(_loader(Flaky(16, bad=range(3, 16)))))
    with pytest.raises(TypeError, match="collate_fn=collate_good_samples"):
        list(SkippedSamples().good_batches([[torch.zeros(1)]]))


def test_scan_images_finds_exactly_the_planted_unreadable_files(tmp_path):
    corpus = write_corpus(tmp_path)
    bad = scan_images(sorted(corpus))
    assert {sample.source for sample in bad} == {p for p, kind in corpus.items() if kind in UNREADABLE}
    assert len(bad) == 13


def test_command_line_prescan(tmp_path, capsys):
    write_corpus(tmp_path / "corpus")
    # The command as a user types it, once; its other answers through the same main().
    done = subprocess.run([sys.executable, "-m", "fixes.bad_samples", str(tmp_path / "corpus")],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert len(done.stdout.splitlines()) == 13 and "._0061.jpg: UnidentifiedImageError" in done.stdout
    assert "13 of 97 image files cannot be loaded" in done.stderr
    (tmp_path / "clean").mkdir()
    (tmp_path / "clean" / "a.jpg").write_bytes(_jpeg_bytes())
    assert prescan_main([str(tmp_path / "clean")]) == 0
    assert "0 of 1 image files cannot be loaded" in capsys.readouterr().err
    assert prescan_main([str(tmp_path / "nope")]) == 2
    assert "not a directory" in capsys.readouterr().err
