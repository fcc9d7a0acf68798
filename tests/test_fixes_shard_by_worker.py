"""Unit tests for fixes/shard_by_worker.py (scenario 13: an IterableDataset yields every sample
once per worker): the shares of all workers add up to the whole stream, each sample once, with
uneven splits, fewer files than workers, real DataLoader workers and drop_last."""
import os
import types
from collections import Counter

import pytest
import torch
from torch.utils.data import DataLoader, IterableDataset

from fixes import shard_by_worker as module
from fixes.shard_by_worker import ShardByWorker, shard_by_worker, worker_share

FORK = {"multiprocessing_context": "fork"} if hasattr(os, "fork") else {}


def files_of(count, records=3):
    """`count` fake files: file f holds records f*100 .. f*100+records-1."""
    return [list(range(f * 100, f * 100 + records)) for f in range(count)]


def as_worker(monkeypatch, worker, workers):
    monkeypatch.setattr(module, "get_worker_info", lambda: types.SimpleNamespace(id=worker, num_workers=workers))


def reading(log):
    def read(file):
        log.append(file[0] // 100)
        yield from file
    return read


def test_main_process_gets_everything():
    files = files_of(3)
    assert list(shard_by_worker(files, iter)) == [r for f in files for r in f]
    assert list(worker_share(range(7))) == list(range(7))


@pytest.mark.parametrize("workers", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("file_count", [0, 1, 2, 3, 4, 5, 8, 9])
def test_shares_add_up_to_the_stream_once(monkeypatch, workers, file_count):
    files = files_of(file_count, records=5)  # 5 records a file: never a multiple of 2 or 4
    shares, reads = [], []
    for worker in range(workers):
        as_worker(monkeypatch, worker, workers)
        log = []
        shares.append(list(shard_by_worker(files, reading(log))))
        reads.append(log)
    assert Counter(r for share in shares for r in share) == Counter(r for f in files for r in f)
    if file_count >= workers:  # whole files: each file opened by exactly one worker
        assert sorted(f for log in reads for f in log) == list(range(file_count))
        assert [len(log) for log in reads] == [len(range(w, file_count, workers)) for w in range(workers)]
    else:  # every k-th record: no worker idle, shares differ by one record at most
        sizes = [len(share) for share in shares]
        assert max(sizes) - min(sizes) <= 1
        assert file_count == 0 or min(sizes) > 0


def test_five_files_over_four_workers_give_worker_0_two(monkeypatch):
    files = files_of(5)
    shares = []
    for worker in range(4):
        as_worker(monkeypatch, worker, 4)
        shares.append(list(shard_by_worker(files, iter)))
    assert [len(s) for s in shares] == [6, 3, 3, 3]
    assert shares[0] == files[0] + files[4]


def test_worker_share_asks_the_worker_when_iterated(monkeypatch):
    share = worker_share(range(10))  # created as in the main process ...
    as_worker(monkeypatch, 1, 3)     # ... iterated in worker 1 of 3
    assert list(share) == [1, 4, 7]


def test_wrapper_keeps_the_length_and_says_when_there_is_none():
    assert len(ShardByWorker(list(range(9)))) == 9
    with pytest.raises(TypeError):
        len(ShardByWorker(iter(range(9))))


class Stream(IterableDataset):
    """A stream that knows nothing of workers, as a library's may."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


def loaded(dataset, num_workers, **options):
    options = {**options, **(FORK if num_workers else {})}
    return [torch.as_tensor(batch).tolist() for batch in DataLoader(dataset, num_workers=num_workers, **options)]


def test_real_workers_yield_the_multiset_of_num_workers_0():
    unwrapped = Counter(loaded(Stream(7), 2, batch_size=None))
    assert set(unwrapped.values()) == {2}  # the failure: each worker replays the stream
    serial = Counter(loaded(ShardByWorker(Stream(7)), 0, batch_size=None))
    parallel = Counter(loaded(ShardByWorker(Stream(7)), 2, batch_size=None))
    assert parallel == serial == Counter(range(7))


def test_files_fewer_than_workers_in_real_workers():
    files = [[0, 1, 2, 3, 4]]

    class OneFile(IterableDataset):
        def __iter__(self):
            return shard_by_worker(files, iter)

    assert sorted(loaded(OneFile(), 2, batch_size=None)) == [0, 1, 2, 3, 4]


def test_drop_last_drops_each_workers_remainder():
    # 10 records over 2 workers in batches of 3: each worker keeps 3 of its 5, drops 2;
    # num_workers=0 keeps 9 and drops 1.
    parallel = loaded(ShardByWorker(Stream(10)), 2, batch_size=3, drop_last=True)
    serial = loaded(ShardByWorker(Stream(10)), 0, batch_size=3, drop_last=True)
    assert sum(map(len, parallel)) == 6 and sum(map(len, serial)) == 9
    assert sorted(r for b in parallel for r in b) == [0, 1, 2, 3, 4, 5]  # 0,2,4 of worker 0; 1,3,5 of worker 1
    # Without drop_last each worker ends with its own short batch: 4 batches where len() says 4.
    kept = loaded(ShardByWorker(Stream(10)), 2, batch_size=3)
    assert [len(b) for b in kept] == [3, 3, 2, 2]
    assert torch.utils.data.DataLoader(ShardByWorker(Stream(10)), batch_size=3).__len__() == 4
