"""Scenario 02: what the runs show beyond their declarations (tests/test_scenarios.py checks
those): the broken epoch dies with the worker's own traceback, the fixed one names every
unreadable file and skips only those, and each popular remedy fails where it was measured to."""
import re
import tempfile

import pytest
import torch
from torch.utils.data import DataLoader

from conftest import REPO_ROOT, load_scenario_module, scenario_report
from fixes.bad_samples import SkipBadSamples, SkippedSamples, collate_good_samples
from scenarios.synthetic_data import GRADING_SEED

SCENARIO_DIR = REPO_ROOT / "scenarios" / "02_corrupt_files"
UNREADABLE_FILES = ["cat/0032.jpg", "dog/._0061.jpg", "dog/0090.jpg",
                    *(f"dog/{n:04d}.jpg" for n in range(71, 81))]


@pytest.fixture(scope="module")
def report():
    return scenario_report("02")


def test_broken_dies_with_the_workers_own_traceback(report):
    broken = report["variants"]["broken"]
    out = broken["output_tail"]
    assert re.search(r"^OSError: Caught OSError in DataLoader worker process [01]\.$", out, re.M)
    assert "Original Traceback (most recent call last):" in out
    # The traceback reaches into the worker: the dataset line that failed, and Pillow's reason.
    assert re.search(r'broken\.py", line \d+, in __getitem__', out)
    assert re.search(r"^OSError: image file is truncated \(\d+ bytes not processed\)$", out, re.M)
    # It trained for a while first: batches 0-3, then batch 4 holds cat/0032.jpg.
    assert "batch  3 " in out and "batch  4 " not in out


def test_fixed_reads_every_readable_image_once_and_names_every_bad_file(report):
    out = report["variants"]["fixed"]["output_tail"]
    assert "skipped 13 of 97 samples that could not be loaded" in out
    for name in UNREADABLE_FILES:
        assert re.search(rf"/{re.escape(name)}: (OSError|UnidentifiedImageError): ", out), name
    assert "cat/0032.jpg: OSError: image file is truncated" in out
    assert "Caught" not in out and "Traceback" not in out
    # 12 batches reached the loop: batch 9 of 13 held only error pages and was skipped.
    assert len(re.findall(r"^batch +\d+ ", out, re.M)) == 12


def test_return_none_dies_in_default_collate(report):
    myth = report["variants"]["myth_return_none"]
    out = myth["output_tail"]
    assert "TypeError: Caught TypeError in DataLoader worker process" in out
    assert "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; " \
           "found <class 'NoneType'>" in out
    assert myth["metrics"]["images_consumed"] == report["variants"]["broken"]["metrics"]["images_consumed"]


def test_filtering_none_in_collate_dies_on_an_all_bad_batch(report):
    out = report["variants"]["myth_filter_none"]["output_tail"]
    assert re.search(r"^IndexError: Caught IndexError in DataLoader worker process [01]\.$", out, re.M)
    # It got past batches 4 and 6 (one bad file each), then died on batch 9, whose files are all bad.
    assert "batch  8 " in out and "batch  9 " not in out
    assert "elem = batch[0]" in out


def test_load_truncated_images_rescues_only_the_truncated_file_with_grey(report):
    myth = report["variants"]["myth_load_truncated"]
    # Past cat/0032.jpg (batch 4, now grey-filled), then dead at dog/._0061.jpg (batch 6).
    assert "PIL.UnidentifiedImageError: Caught UnidentifiedImageError in DataLoader worker process" \
        in myth["output_tail"]
    assert myth["metrics"]["images_consumed"] > report["variants"]["broken"]["metrics"]["images_consumed"]


def test_every_worker_exception_arrives_with_its_traceback(report):
    figures = report["variants"]["myth_silent_exit"]["metrics"]
    # Batches 4, 6, 9, 10 and 11 hold unreadable files: each one's exception arrives, with its traceback.
    assert figures["worker_errors_reraised"] == figures["errors_with_original_traceback"] == 5


def test_oracle_fixed_loader_with_workers_yields_what_num_workers_0_yields():
    fixed = load_scenario_module(SCENARIO_DIR.name, "fixed")
    corpus = load_scenario_module(SCENARIO_DIR.name, "_image_corpus")
    runs = {}
    with tempfile.TemporaryDirectory() as root:
        corpus.write_corpus(root)
        dataset = fixed.ImageFolderDataset(root)
        for workers in (0, 2):
            loader = DataLoader(SkipBadSamples(dataset, sources=dataset.paths), batch_size=8,
                                num_workers=workers, collate_fn=collate_good_samples,
                                multiprocessing_context="fork" if workers else None)
            skipped = SkippedSamples()
            batches = list(skipped.good_batches(loader))
            runs[workers] = (batches, sorted(skipped.skipped))
    (serial, serial_skipped), (parallel, parallel_skipped) = runs[0], runs[2]
    assert len(serial) == len(parallel) == 12
    for (images0, labels0, indices0), (images2, labels2, indices2) in zip(serial, parallel):
        assert torch.equal(images0, images2)
        assert torch.equal(labels0, labels2) and torch.equal(indices0, indices2)
    assert serial_skipped == parallel_skipped and len(serial_skipped) == 13


def test_the_graders_seed_moves_the_unreadable_files_and_keeps_their_kinds(monkeypatch, tmp_path):
    corpus = load_scenario_module(SCENARIO_DIR.name, "_image_corpus")

    def unreadable(folder) -> tuple[list, list]:
        written = corpus.write_corpus(folder)
        bad = sorted((kind, path[len(str(folder)) + 1:]) for path, kind in written.items() if kind in corpus.UNREADABLE)
        return sorted(kind for kind, _ in bad), sorted(path for _, path in bad)

    monkeypatch.delenv(GRADING_SEED, raising=False)
    kinds, documented = unreadable(tmp_path / "documented")
    assert documented == sorted(UNREADABLE_FILES)
    placements = set()
    for seed in ("1", "2", "20261124"):
        monkeypatch.setenv(GRADING_SEED, seed)
        moved_kinds, moved = unreadable(tmp_path / seed)
        assert moved_kinds == kinds and len(moved) == 13 and moved != documented
        placements.add(tuple(moved))
    assert len(placements) == 3
