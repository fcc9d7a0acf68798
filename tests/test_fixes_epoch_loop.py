"""Unit tests for fixes/epoch_loop.py (scenario 15: DistributedSampler without set_epoch repeats
its order every epoch).  In-process: a DistributedSampler takes num_replicas and rank, so no
process group is needed to see what set_epoch changes."""
import pytest
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler, RandomSampler

from fixes.epoch_loop import epochs, set_epoch

SAMPLES = 11


def orders(loader, count, **kwargs):
    return [[int(i) for batch in loader for i in batch] for _ in epochs(loader, count, **kwargs)]


def test_without_set_epoch_every_epoch_repeats_the_first_order():
    # What the fix is for, measured on PyTorch's own sampler: seed + 0, every epoch.
    sampler = DistributedSampler(range(SAMPLES), num_replicas=2, rank=0)
    loader = DataLoader(range(SAMPLES), sampler=sampler, batch_size=4)
    plain = [[int(i) for batch in loader for i in batch] for _ in range(3)]
    assert plain[0] == plain[1] == plain[2]


def test_each_epoch_gets_a_new_order_and_the_ranks_still_split_it():
    per_rank = [orders(DataLoader(range(SAMPLES), batch_size=4,
                                  sampler=DistributedSampler(range(SAMPLES), num_replicas=2, rank=r)), 3)
                for r in (0, 1)]
    for rank_orders in per_rank:
        assert len({tuple(o) for o in rank_orders}) == 3
    for epoch in range(3):
        both = per_rank[0][epoch] + per_rank[1][epoch]
        assert sorted(set(both)) == list(range(SAMPLES))  # every sample, every epoch
        assert len(both) - len(set(both)) == 1            # 11 on 2 ranks: 1 padding duplicate


def test_the_order_is_the_samplers_own_for_that_epoch_so_a_resumed_run_matches():
    def loader():
        return DataLoader(range(SAMPLES), batch_size=4,
                          sampler=DistributedSampler(range(SAMPLES), num_replicas=2, rank=1))
    full = orders(loader(), 4)
    assert orders(loader(), 2, start=2) == full[2:]


def test_the_sampler_inside_a_batch_sampler_is_reached():
    sampler = DistributedSampler(range(SAMPLES), num_replicas=2, rank=0)
    loader = DataLoader(range(SAMPLES), batch_sampler=BatchSampler(sampler, 4, drop_last=False))
    assert "loader.batch_sampler.sampler" in set_epoch(loader, 5)
    assert sampler.epoch == 5
    assert len({tuple(o) for o in orders(loader, 3)}) == 3


def test_the_dataset_gets_the_epoch_too_and_each_object_once():
    class EpochDataset(list):
        calls = []

        def set_epoch(self, epoch):
            self.calls.append(epoch)

    dataset = EpochDataset(range(SAMPLES))
    loader = DataLoader(dataset, sampler=DistributedSampler(dataset, num_replicas=2, rank=0))
    assert set_epoch(loader, 3) == ["loader.sampler", "loader.dataset"]
    assert dataset.calls == [3]


def test_a_plain_shuffling_loader_is_left_alone():
    loader = DataLoader(range(SAMPLES), sampler=RandomSampler(range(SAMPLES)), batch_size=4)
    assert set_epoch(loader, 1) == []
    assert len(orders(loader, 2)[0]) == SAMPLES


def test_a_distributed_sampler_that_does_not_store_the_epoch_is_refused():
    class ForgetfulSampler(DistributedSampler):
        def set_epoch(self, epoch):
            pass  # overrides without calling super(): the order would never change

    loader = DataLoader(range(SAMPLES), sampler=ForgetfulSampler(range(SAMPLES), num_replicas=2, rank=0))
    with pytest.raises(RuntimeError, match=r"loader\.sampler is a ForgetfulSampler whose epoch is still 0"):
        next(epochs(loader, 2, start=1))


def test_something_that_is_not_a_loader_is_refused():
    with pytest.raises(TypeError, match="takes the DataLoader itself"):
        next(epochs(range(3), 2))
