"""Scenario 02: one corrupt file kills the broken epoch; the fixed one skips,
counts and names every unreadable file; the seed's remedies fail as measured."""
import re
import tempfile

import pytest
import torch
from torch.utils.data import DataLoader

from conftest import REPO_ROOT, load_scenario_module, run_scenario_json

SCENARIO_DIR = REPO_ROOT / "scenarios" / "02_corrupt_files"
UNREADABLE_FILES = ["cat/0032.jpg", "dog/._0061.jpg", "dog/0090.jpg",
                    *(f"dog/{n:04d}.jpg" for n in range(71, 81))]


@pytest.fixture(scope="module")
def report():
    return run_scenario_json("02", "all")


def test_broken_dies_with_the_workers_own_traceback(report):
    broken = report["variants"]["broken"]
    assert report["reproduced"], broken["breaches"]
    assert broken["outcome"] == "error" and broken["exit_code"] == 1
    out = broken["output_tail"]
    assert re.search(r"^OSError: Caught OSError in DataLoader worker process [01]\.$", out, re.M)
    assert "Original Traceback (most recent call last):" in out
    # The traceback reaches into the worker: the dataset line that failed, and Pillow's reason.
    assert re.search(r'broken\.py", line \d+, in __getitem__', out)
    assert re.search(r"^OSError: image file is truncated \(\d+ bytes not processed\)$", out, re.M)
    # It trained for a while first: batches 0-3, then batch 4 holds cat/0032.jpg.
    assert broken["metrics"]["images_consumed"] == 32
    assert "batch  3 " in out and "batch  4 " not in out


def test_fixed_reads_every_readable_image_once_and_names_every_bad_file(report):
    fixed = report["variants"]["fixed"]
    assert report["fixed"], fixed["breaches"]
    assert fixed["outcome"] == "completed" and fixed["exit_code"] == 0
    assert fixed["metrics"]["images_consumed"] == 84
    assert fixed["metrics"]["bad_files_named"] == 13
    out = fixed["output_tail"]
    assert "skipped 13 of 97 samples that could not be loaded" in out
    for name in UNREADABLE_FILES:
        assert re.search(rf"/{re.escape(name)}: (OSError|UnidentifiedImageError): ", out), name
    assert "cat/0032.jpg: OSError: image file is truncated" in out
    assert "Caught" not in out and "Traceback" not in out
    # 12 batches reached the loop: batch 9 of 13 held only error pages and was skipped.
    assert len(re.findall(r"^batch +\d+ ", out, re.M)) == 12


def test_return_none_dies_in_default_collate(report):
    myth = report["variants"]["myth_return_none"]
    assert myth["as_expected"], myth["breaches"]
    out = myth["output_tail"]
    assert "TypeError: Caught TypeError in DataLoader worker process" in out
    assert "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; " \
           "found <class 'NoneType'>" in out
    assert myth["metrics"]["images_consumed"] == report["variants"]["broken"]["metrics"]["images_consumed"]


def test_filtering_none_in_collate_dies_on_an_all_bad_batch(report):
    myth = report["variants"]["myth_filter_none"]
    assert myth["as_expected"], myth["breaches"]
    out = myth["output_tail"]
    assert re.search(r"^IndexError: Caught IndexError in DataLoader worker process [01]\.$", out, re.M)
    assert re.search(r"^IndexError: list index out of range$", out, re.M)
    # It got past batches 4 and 6 (one bad file each), then died on batch 9.
    assert myth["metrics"]["images_consumed"] == 70


def test_load_truncated_images_rescues_only_the_truncated_file_with_grey(report):
    myth = report["variants"]["myth_load_truncated"]
    assert myth["as_expected"], myth["breaches"]
    assert myth["metrics"]["truncated_image_grey_percent"] >= 20
    assert myth["metrics"]["images_consumed"] == 48  # past cat/0032.jpg, up to dog/._0061.jpg
    assert "PIL.UnidentifiedImageError: Caught UnidentifiedImageError in DataLoader worker process" \
        in myth["output_tail"]


def test_worker_exceptions_are_not_silent_and_workers_survive(report):
    myth = report["variants"]["myth_silent_exit"]
    assert myth["as_expected"], myth["breaches"]
    figures = myth["metrics"]
    # Batches 4, 6, 9, 10 and 11 hold unreadable files: each one's exception arrives.
    assert figures["worker_errors_reraised"] == figures["errors_with_original_traceback"] == 5
    assert figures["workers_alive_after_error_min"] == 2
    assert figures["readable_images_lost"] == 27


def test_oracle_fixed_loader_with_workers_yields_what_num_workers_0_yields():
    from fixes.bad_samples import SkipBadSamples, SkippedSamples, collate_good_samples

    fixed = load_scenario_module(SCENARIO_DIR.name, "fixed")
    corpus = load_scenario_module(SCENARIO_DIR.name, "image_corpus")
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
