"""Scenario 22: what the runs show beyond their declarations (tests/test_scenarios.py checks
those): datasets' own log line in the broken run, once, from worker 0; none in the fixed run;
shuffle() leaves the shard count as it was (datasets 5.2); the measured throughput follows the
shards each worker got; and the oracle: the resharded stream with 4 workers yields the rows
that the files yield with num_workers=0."""
import json
import os
import subprocess
import sys
import tempfile

import pytest
from datasets import load_dataset

from conftest import REPO_ROOT, load_scenario_module, scenario_report

FOLDER = "22_fewer_shards_than_workers"
DATASETS_WARNING = "Too many dataloader workers: 4 (max is dataset.num_shards=3). Stopping 1 dataloader workers."


@pytest.fixture(scope="module")
def report():
    return scenario_report("22")


def test_broken_prints_datasets_own_line_once(report):
    broken = report["variants"]["broken"]
    lines = broken["output_tail"].splitlines()
    # Logged by worker 0 alone (IterableDataset._is_main_process), once per epoch.
    assert lines.count(DATASETS_WARNING) == 1
    assert "samples per worker [80, 80, 80, 0]" in broken["output_tail"]
    # No sample lost, none twice: the 4th worker's absence costs time, not data.
    assert broken["metrics"]["samples"] == broken["metrics"]["distinct_samples"] == 240


def test_fixed_has_no_warning_and_equal_shares(report):
    fixed = report["variants"]["fixed"]
    assert "Too many dataloader workers" not in fixed["output_tail"]
    assert fixed["metrics"]["busiest_worker_samples"] * 4 == fixed["metrics"]["samples"]


def test_shuffle_neither_adds_nor_removes_shards(report):
    myth = report["variants"]["myth_shuffle_spreads_shards"]
    assert myth["output_tail"].splitlines().count(DATASETS_WARNING) == 1
    assert myth["metrics"]["num_shards"] == report["variants"]["broken"]["metrics"]["num_shards"] == 3
    assert "samples per worker [80, 80, 80, 0]" in myth["output_tail"]


def test_throughput_follows_the_busiest_workers_shards(report):
    m = report["variants"]["measure_shards_vs_workers"]["metrics"]
    # 5 files: worker 0 reads two files, twice the rows of the others, and the epoch waits for it.
    assert m["five_files_busiest_worker_samples"] == 2 * m["five_files_idlest_worker_samples"] == 96
    assert m["five_files_relative_throughput"] < m["three_files_relative_throughput"] \
        < m["four_files_relative_throughput"]
    # 4 files and 3 files resharded into 12 row groups load alike: 60 rows per worker each.
    assert m["four_files_busiest_worker_samples"] == m["three_files_resharded_busiest_worker_samples"] == 60


# Run in a process of its own: forking DataLoader workers from a pytest worker whose other tests left
# threads behind once hung a worker in Popen._launch for good (a fresh clone's full run).
ORACLE = """
import json, sys, tempfile
from collections import Counter
from datasets import load_dataset
from torch.utils.data import DataLoader
sys.path.insert(0, sys.argv[1])
import _parquet_corpus, fixed
with tempfile.TemporaryDirectory() as root:
    files = _parquet_corpus.write_parquet_files(root, 3)
    stream = load_dataset("parquet", data_files=files, split="train", streaming=True, cache_dir=root + "/cache")
    resharded = fixed.reshard_for_workers(stream, num_workers=4)
    serial = Counter(tuple(row.values()) for row in DataLoader(stream, batch_size=None, num_workers=0))
    parallel = Counter(tuple(row.values()) for row in DataLoader(
        resharded, batch_size=None, num_workers=4, multiprocessing_context="fork", timeout=60))
print(json.dumps({"shards": resharded.num_shards, "same": parallel == serial,
                  "ids": sorted(row[0] for row in serial)}))
"""


@pytest.mark.full  # an oracle beside the fixed run's declared checks
@pytest.mark.skipif(not hasattr(os, "fork"), reason="uses fork to keep the test fast")
def test_oracle_resharded_with_workers_yields_what_num_workers_0_yields():
    done = subprocess.run([sys.executable, "-c", ORACLE, str(REPO_ROOT / "scenarios" / FOLDER)],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["shards"] == 12
    assert seen["same"] and seen["ids"] == list(range(240))


def test_shuffle_keeps_the_shard_count_in_the_pinned_datasets():
    # datasets 5.0.x reported num_shards=1 after shuffle() for fewer than 20 files
    # (huggingface/datasets#8669); 5.2 keeps it. This fails if the pin moves to a release that differs.
    corpus = load_scenario_module(FOLDER, "_parquet_corpus")
    with tempfile.TemporaryDirectory() as root:
        files = corpus.write_parquet_files(root, 3)
        stream = load_dataset("parquet", data_files=files, split="train", streaming=True, cache_dir=f"{root}/cache")
        assert stream.shuffle(seed=0, buffer_size=64).num_shards == stream.num_shards == 3
        assert stream.reshard().shuffle(seed=0).num_shards == 12
