"""Unit tests for fixes/epoch_in_indices.py (scenario 14: persistent workers never see the new epoch)."""
import gc
import os
import pickle

import pytest
import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, DistributedSampler, RandomSampler

from fixes.epoch_in_indices import EpochInIndices

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (Linux, macOS)")


class Curriculum(Dataset):
    """A sample is (index, the epoch this copy believed, a value that depends on both)."""

    def __init__(self, size=12):
        self.size, self.epoch, self.set_calls = size, 0, 0

    def set_epoch(self, epoch):
        self.epoch, self.set_calls = epoch, self.set_calls + 1

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        value = torch.randn(3, generator=torch.Generator().manual_seed(index)) * (1 + self.epoch)
        return {"index": index, "epoch": self.epoch, "value": value, "pid": os.getpid()}


def epochs_of(loader, dataset, epochs=3):
    """Run `epochs` epochs, calling set_epoch first as a training loop does."""
    seen = []
    for epoch in range(epochs):
        dataset.set_epoch(epoch)
        seen.append(list(loader))
    return seen


def test_persistent_workers_follow_set_epoch_and_stay_the_same_processes():
    dataset = EpochInIndices(Curriculum())
    loader = DataLoader(dataset, sampler=dataset.sampler(), batch_size=4, num_workers=2,
                        persistent_workers=True, multiprocessing_context="fork")
    seen = epochs_of(loader, dataset)
    for epoch, batches in enumerate(seen):
        assert {int(e) for batch in batches for e in batch["epoch"]} == {epoch}
    pids = {int(p) for batches in seen for batch in batches for p in batch["pid"]}
    assert len(pids) == 2 and os.getpid() not in pids


def test_without_the_wrapper_persistent_workers_keep_epoch_0():
    # The failure the wrapper exists for, so that this test file shows both sides.
    dataset = Curriculum()
    loader = DataLoader(dataset, batch_size=4, num_workers=2, persistent_workers=True,
                        multiprocessing_context="fork")
    seen = epochs_of(loader, dataset)
    assert {int(e) for batch in seen[2] for e in batch["epoch"]} == {0}


def test_oracle_workers_yield_what_num_workers_0_yields():
    runs = {}
    for workers in (0, 2):
        dataset = EpochInIndices(Curriculum())
        options = dict(persistent_workers=True, multiprocessing_context="fork") if workers else {}
        loader = DataLoader(dataset, sampler=dataset.sampler(), batch_size=5, num_workers=workers, **options)
        runs[workers] = epochs_of(loader, dataset)
    for serial, parallel in zip(runs[0], runs[2]):
        assert len(serial) == len(parallel) == 3
        for a, b in zip(serial, parallel):
            assert torch.equal(a["index"], b["index"]) and torch.equal(a["epoch"], b["epoch"])
            assert torch.equal(a["value"], b["value"])


def test_a_plain_index_in_a_worker_says_to_pass_the_sampler():
    dataset = EpochInIndices(Curriculum())
    loader = DataLoader(dataset, batch_size=4, num_workers=1, multiprocessing_context="fork")
    with pytest.raises(TypeError, match=r"pass sampler=dataset\.sampler\(\)"):
        next(iter(loader))
    # The exception's traceback holds the iterator in a reference cycle. Collect it now, in this
    # process: left to a later fork, the collection (and the iterator's __del__) would run in
    # that loader's worker, in the middle of its imports, and kill it.
    gc.collect()


def test_a_plain_index_in_the_main_process_uses_the_current_epoch():
    dataset = EpochInIndices(Curriculum())
    dataset.set_epoch(4)
    assert dataset[3]["epoch"] == 4 and dataset.dataset.epoch == 4


def test_a_dataset_without_set_epoch_is_refused_with_what_to_add():
    with pytest.raises(TypeError, match=r"has none\. Add one"):
        EpochInIndices(list(range(5)))


def test_set_epoch_reaches_the_dataset_once_per_epoch_in_each_copy():
    inner = Curriculum()
    dataset = EpochInIndices(inner)
    dataset.set_epoch(1)
    for index in range(5):
        dataset[(1, index)]
    assert inner.set_calls == 1
    dataset[(2, 0)]
    assert inner.epoch == 2 and inner.set_calls == 2


def test_before_any_set_epoch_the_dataset_is_left_as_it_is():
    inner = Curriculum()
    inner.epoch = 7
    dataset = EpochInIndices(inner)
    assert list(dataset.sampler())[:2] == [(None, 0), (None, 1)]
    assert dataset[(None, 0)]["epoch"] == 7 and inner.set_calls == 0


def test_a_base_sampler_with_set_epoch_gets_the_epoch_too():
    inner = Curriculum(size=10)
    dataset = EpochInIndices(inner)
    base = DistributedSampler(inner, num_replicas=2, rank=0, shuffle=True, seed=3)
    sampler = dataset.sampler(base)
    reference = DistributedSampler(inner, num_replicas=2, rank=0, shuffle=True, seed=3)
    for epoch in range(3):
        dataset.set_epoch(epoch)
        reference.set_epoch(epoch)
        assert list(sampler) == [(epoch, i) for i in reference]
    assert len(sampler) == len(reference) == 5


def test_works_inside_a_batch_sampler_and_with_shuffling():
    inner = Curriculum(size=10)
    dataset = EpochInIndices(inner)
    sampler = dataset.sampler(RandomSampler(inner, generator=torch.Generator().manual_seed(0)))
    loader = DataLoader(dataset, batch_sampler=BatchSampler(sampler, batch_size=4, drop_last=False),
                        num_workers=2, persistent_workers=True, multiprocessing_context="fork")
    seen = epochs_of(loader, dataset, epochs=2)
    assert sorted(int(i) for batch in seen[1] for i in batch["index"]) == list(range(10))
    assert {int(e) for batch in seen[1] for e in batch["epoch"]} == {1}


def test_pickles_and_forwards_attributes_of_the_wrapped_dataset():
    dataset = EpochInIndices(Curriculum(size=7))
    dataset.set_epoch(2)
    copy = pickle.loads(pickle.dumps(dataset))
    assert copy.size == 7 and len(copy) == 7 and copy.epoch == 2
    with pytest.raises(AttributeError):
        _ = copy.no_such_attribute


@pytest.mark.full  # the fork case shows the fix in make test
def test_spawned_persistent_workers_follow_set_epoch_too():
    # A spawned worker gets a pickled copy of the dataset, not a fork: the same fix applies.
    dataset = EpochInIndices(Curriculum(size=4))
    loader = DataLoader(dataset, sampler=dataset.sampler(), batch_size=4, num_workers=1,
                        persistent_workers=True, multiprocessing_context="spawn")
    seen = epochs_of(loader, dataset, epochs=2)
    assert [sorted({int(e) for batch in batches for e in batch["epoch"]}) for batches in seen] == [[0], [1]]
