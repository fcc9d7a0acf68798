"""Scenario 13: what the runs show beyond their declarations (tests/test_scenarios.py checks
those): PyTorch's own length warning in the broken run and what it counts, the copies it
misses once batches are formed, what the per-worker batches of the fixed stream do with an
uneven split and drop_last, and the oracle: the fixed stream with 4 workers yields what
num_workers=0 yields."""
import os
import re
import tempfile
import warnings
from collections import Counter

import pytest
from torch.utils.data import DataLoader

from conftest import REPO_ROOT, load_scenario_module, scenario_report

SCENARIO_DIR = REPO_ROOT / "scenarios" / "13_iterable_dataset_duplicates"
LENGTH_WARNING = re.compile(
    r"broken\.py:\d+: UserWarning: Length of IterableDataset <__main__\.ShardStream object at 0x[0-9a-f]+> "
    r"was reported to be 30\(when accessing len\(dataloader\)\), but (\d+) samples have been fetched\. "
    r"For multiprocessing data-loading, this could be caused by not properly configuring the "
    r"IterableDataset replica at each worker\. Please see "
    r"https://pytorch\.org/docs/stable/data\.html#torch\.utils\.data\.IterableDataset for examples\.$", re.M)


@pytest.fixture(scope="module")
def report():
    return scenario_report("13")


def test_broken_shows_pytorchs_warning_once_per_batch_past_len(report):
    broken = report["variants"]["broken"]
    figures = broken["metrics"]
    counts = [int(n) for n in LENGTH_WARNING.findall(broken["output_tail"])]
    # The warning points at the training loop (stacklevel=2), and its count runs to the last batch.
    assert counts and counts[-1] == figures["batches"] == 120
    assert counts == list(range(counts[0], 121))
    # One warning for each batch beyond len(dataset): 120 batches of 1 for 30 records.
    assert figures["length_warnings"] == figures["batches"] - figures["records_expected"]
    # Every record exactly 4 times, once per worker: none missing, none 5 times.
    assert "90 extra copies (up to 4 of one record), 0 missing" in broken["evidence"]


def test_fixed_fetches_what_len_promised(report):
    fixed = report["variants"]["fixed"]["metrics"]
    broken = report["variants"]["broken"]["metrics"]
    assert fixed["batches"] == fixed["loader_len"] == broken["loader_len"] == 30
    assert "Length of IterableDataset" not in report["variants"]["fixed"]["output_tail"]


def test_batches_of_8_hide_the_same_copies_from_the_warning(report):
    myth = report["variants"]["myth_length_warning"]
    figures = myth["metrics"]
    assert figures["extra_copies"] == report["variants"]["broken"]["metrics"]["extra_copies"]
    # 4 workers x ceil(30 / 8) batches: 16, compared with len(dataset) = 30 samples, never above it.
    assert figures["batches"] == 4 * figures["loader_len"] < figures["records_expected"]
    assert "Length of IterableDataset" not in myth["output_tail"]


def test_batches_are_formed_per_worker(report):
    figures = report["variants"]["measure_uneven_split"]["metrics"]
    # Without drop_last, each worker's share ends in its own short batch: more batches than len().
    assert figures["keep_last_batches"] > figures["keep_last_loader_len"]
    # With drop_last, each worker drops its own remainder: more dropped, fewer batches than len().
    assert figures["drop_last_dropped"] > figures["drop_last_dropped_num_workers_0"]
    assert figures["drop_last_batches"] < figures["drop_last_loader_len"]
    # 5 files over 4 workers: worker 0 reads two files, twice the records of the others.
    assert figures["keep_last_worker_share_max"] == 2 * figures["keep_last_worker_share_min"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="uses fork to keep the test fast")
def test_oracle_fixed_stream_with_workers_yields_what_num_workers_0_yields():
    fixed = load_scenario_module(SCENARIO_DIR.name, "fixed")
    shards = load_scenario_module(SCENARIO_DIR.name, "_shard_files")
    with tempfile.TemporaryDirectory() as root:
        dataset = fixed.ShardStream(shards.write_shards(root))
        runs = {}
        for workers in (0, 4):
            loader = DataLoader(dataset, num_workers=workers,
                                multiprocessing_context="fork" if workers else None)
            runs[workers] = Counter((int(i), tuple(x.flatten().tolist())) for i, x in loader)
    assert runs[4] == runs[0]
    assert sorted(i for i, _ in runs[0]) == list(range(30))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="uses fork to keep the test fast")
def test_without_len_before_iter_the_same_copies_come_without_a_warning():
    broken = load_scenario_module(SCENARIO_DIR.name, "broken")
    shards = load_scenario_module(SCENARIO_DIR.name, "_shard_files")
    with tempfile.TemporaryDirectory() as root, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loader = DataLoader(broken.ShardStream(shards.write_shards(root)), num_workers=2,
                            multiprocessing_context="fork")
        fetched = Counter(int(i) for i, _ in loader)  # len(loader) never asked, as without a progress bar
    assert set(fetched.values()) == {2} and len(fetched) == 30
    assert not [w for w in caught if "Length of IterableDataset" in str(w.message)]
