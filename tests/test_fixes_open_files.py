"""fixes.open_files: copies out of shared memory, and the descriptor limit (scenario 08)."""
import collections
import resource

import torch
from torch.utils.data import DataLoader, TensorDataset

from fixes.open_files import copy_out_of_shared_memory, fd_soft_limit
from scenarios.instruments import open_fd_count

Pair = collections.namedtuple("Pair", "features labels")


def shared(values):
    return torch.tensor(values).share_memory_()


def test_shared_tensors_are_copied_everywhere_in_a_nested_batch():
    private = torch.ones(2)
    batch = {"x": [shared([1.0, 2.0]), (shared([3]), private)], "pair": Pair(shared([4.0]), 5), "id": "a"}
    copied = copy_out_of_shared_memory(batch)
    assert not copied["x"][0].is_shared() and torch.equal(copied["x"][0], batch["x"][0])
    assert isinstance(copied["x"][1], tuple) and not copied["x"][1][0].is_shared()
    assert copied["x"][1][1] is private  # already private: not copied again
    assert isinstance(copied["pair"], Pair) and copied["pair"].labels == 5
    assert not copied["pair"].features.is_shared()
    assert copied["id"] == "a"
    copied["x"][0][0] = 99.0  # a copy, not a view of the shared block
    assert batch["x"][0][0] == 1.0


def test_fd_soft_limit_follows_ulimit_n():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowered = 200 if soft == resource.RLIM_INFINITY else min(soft - 1, 200)
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowered, hard))
    try:
        assert fd_soft_limit() == lowered
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _loader(num_workers):
    data = TensorDataset(torch.arange(640.0).reshape(320, 2), torch.arange(320) % 7)
    return DataLoader(data, batch_size=4, num_workers=num_workers,
                      multiprocessing_context="fork" if num_workers else None)


def test_kept_worker_batches_hold_one_fd_each_and_copies_hold_none():
    # The default strategy on Linux passes each tensor as a descriptor.
    assert torch.multiprocessing.get_sharing_strategy() == "file_descriptor"
    before = open_fd_count()
    raw = [labels for _, labels in _loader(2)]
    assert open_fd_count() - before >= 0.9 * len(raw)  # one descriptor per kept tensor
    assert all(t.is_shared() for t in raw)
    del raw
    assert open_fd_count() - before <= 5  # freed tensors close their descriptors
    copies = [copy_out_of_shared_memory(batch) for batch in _loader(2)]
    assert open_fd_count() - before <= 5
    # Oracle: with two workers and the copies, exactly what the main process alone yields.
    expected = list(_loader(0))
    assert len(copies) == len(expected) == 80
    for (x, y), (x0, y0) in zip(copies, expected):
        assert torch.equal(x, x0) and torch.equal(y, y0)
        assert not x.is_shared() and not y.is_shared()
