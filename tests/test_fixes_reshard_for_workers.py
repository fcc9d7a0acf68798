"""Unit tests for fixes/reshard_for_workers.py (scenario 22: fewer shards than workers): its
arithmetic against the datasets library's own split, when it reshards and when it keeps the
dataset, its refusal, and real Parquet files read by real DataLoader workers."""
import os
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from datasets import Dataset, load_dataset
from torch.utils.data import DataLoader, get_worker_info

from fixes.reshard_for_workers import reshard_for_workers, shards_per_worker, worker_load

FORK = {"multiprocessing_context": "fork"} if hasattr(os, "fork") else {}


class Stream:
    """Stands in for a datasets.IterableDataset: a shard count, and what reshard() would give."""

    def __init__(self, num_shards, resharded=None):
        self.num_shards, self.resharded, self.reshard_calls = num_shards, resharded, 0

    def reshard(self):
        self.reshard_calls += 1
        return Stream(self.resharded or self.num_shards)


@pytest.mark.parametrize("num_workers", [1, 2, 3, 4, 6])
def test_shards_per_worker_is_datasets_own_split(num_workers):
    # datasets 5.2 gives DataLoader worker k the shards split_shard_indices_by_worker(contiguous=False) names.
    for num_shards in range(1, 14):
        stream = Dataset.from_dict({"i": list(range(26))}).to_iterable_dataset(num_shards=num_shards)
        theirs = [len(stream._ex_iterable.split_shard_indices_by_worker(num_workers, k, contiguous=False))
                  for k in range(num_workers)]
        assert shards_per_worker(num_shards, num_workers) == theirs


def test_worker_load():
    assert worker_load(3, 4) == 0.75      # one worker idles
    assert worker_load(5, 4) == 0.625     # worker 0 reads two shards, the others one
    assert worker_load(12, 4) == worker_load(4, 4) == 1.0
    assert worker_load(0, 4) == 0.0


def test_even_shards_are_kept_without_resharding():
    stream = Stream(8, resharded=32)
    assert reshard_for_workers(stream, 4) is stream and stream.reshard_calls == 0


def test_no_workers_means_no_change():
    stream = Stream(1)
    assert reshard_for_workers(stream, 0) is stream and stream.reshard_calls == 0


@pytest.mark.parametrize("shards, resharded, workers, expected", [
    (3, 12, 4, 12),   # the scenario: 3 Parquet files of 4 row groups each
    (5, 20, 4, 20),   # uneven, evened out
    (5, 5, 4, 5),     # cannot be split: uneven but nobody idles, so kept
    (6, 7, 4, 7),     # 0.875 of the workers' time against 0.75: resharded
    (7, 9, 4, 7),     # more shards, worse spread (0.75 against 0.875): kept
])
def test_takes_whichever_spreads_better(shards, resharded, workers, expected):
    assert reshard_for_workers(Stream(shards, resharded), workers).num_shards == expected


def test_a_release_without_reshard_is_judged_as_it_is():
    class OldStream:  # datasets before 4.6: num_shards, no reshard()
        num_shards = 5
    old = OldStream()
    assert reshard_for_workers(old, 4) is old
    OldStream.num_shards = 2
    with pytest.raises(ValueError, match="num_shards=2 .* 2 DataLoader workers would get no data"):
        reshard_for_workers(old, 4)


def test_refuses_when_a_worker_would_still_get_nothing():
    in_memory = Dataset.from_dict({"i": list(range(10))}).to_iterable_dataset(num_shards=2)
    with pytest.raises(ValueError) as refused:
        reshard_for_workers(in_memory, 4)  # reshard() cannot split in-memory shards
    message = str(refused.value)
    assert "dataset.num_shards=2 (after reshard()) for num_workers=4: 2 DataLoader workers would get no data" in message
    assert "to_iterable_dataset(num_shards=4)" in message and "num_workers=2" in message


def tagged(row):
    row["worker"] = get_worker_info().id
    return row


def test_parquet_files_resharded_keep_every_real_worker_busy(tmp_path):
    # 2 files of 3 row groups each over 3 workers: 2 shards, then 6 after reshard(), 2 per worker.
    for f in range(2):
        pq.write_table(pa.table({"i": list(range(f * 30, f * 30 + 30))}), tmp_path / f"{f}.parquet", row_group_size=10)
    files = sorted(map(str, tmp_path.glob("*.parquet")))
    stream = load_dataset("parquet", data_files=files, split="train", streaming=True, cache_dir=str(tmp_path / "c"))
    fixed = reshard_for_workers(stream, 3)
    assert (stream.num_shards, fixed.num_shards) == (2, 6)
    rows = list(DataLoader(fixed.map(tagged), batch_size=None, num_workers=3, **FORK))
    assert sorted(r["i"] for r in rows) == list(range(60))
    assert Counter(r["worker"] for r in rows) == {0: 20, 1: 20, 2: 20}
