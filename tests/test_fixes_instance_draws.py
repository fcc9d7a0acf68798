"""InstanceDrawSampler (fixes/instance_draws.py), the state-in-the-main-process fix of scenario 05."""
from collections import Counter

import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from fixes.instance_draws import InstanceDrawSampler


class VisitEcho(Dataset):
    """Stateless: returns what the sampler asked it to read."""

    def __getitem__(self, visit):
        bag, picked = visit
        return bag, torch.tensor(picked)


def _draws(visits):
    return [(bag, i) for bag, picked in visits for i in picked]


def test_one_epoch_draws_every_instance_of_every_bag_exactly_once():
    sampler = InstanceDrawSampler(bags=5, instances=12, draw=3, seed=1)
    visits = list(sampler)
    assert len(visits) == len(sampler) == 5 * 4
    assert Counter(bag for bag, _ in visits) == {bag: 4 for bag in range(5)}
    assert sorted(_draws(visits)) == [(bag, i) for bag in range(5) for i in range(12)]
    assert sampler.visits_drawn == 20
    assert int(sampler.unused.sum()) == 0


def test_indices_are_plain_ints_not_tensors():
    bag, picked = next(iter(InstanceDrawSampler(bags=2, instances=4, draw=2)))
    assert type(bag) is int and all(type(i) is int for i in picked)


def test_the_state_persists_across_epochs_until_the_bag_is_exhausted():
    # One visit per epoch: a round of 12 instances spans three epochs, then a new one begins.
    sampler = InstanceDrawSampler(bags=1, instances=12, draw=4, visits=1, seed=0)
    epochs = [_draws(sampler) for _ in range(4)]
    assert sorted(epochs[0] + epochs[1] + epochs[2]) == [(0, i) for i in range(12)]
    assert int(sampler.unused.sum()) == 12 - 4  # the fourth epoch started a fresh round
    assert len(set(epochs[3])) == 4


def test_same_seed_same_draws_other_seed_other_draws():
    def make(seed):
        return list(InstanceDrawSampler(bags=4, instances=16, draw=4, shuffle=True, seed=seed))

    assert make(7) == make(7)
    assert make(7) != make(8)


def test_shuffle_keeps_visits_per_bag():
    visits = list(InstanceDrawSampler(bags=6, instances=8, draw=2, shuffle=True, seed=3))
    assert Counter(bag for bag, _ in visits) == {bag: 4 for bag in range(6)}
    assert [bag for bag, _ in visits] != sorted(bag for bag, _ in visits)
    assert len(set(_draws(visits))) == 6 * 8


@pytest.mark.parametrize("kwargs, hint", [
    (dict(bags=2, instances=4, draw=5), "choose draw between 1 and 4"),
    (dict(bags=2, instances=4, draw=0), "choose draw between 1 and 4"),
    (dict(bags=0, instances=4, draw=1), "at least one bag"),
    (dict(bags=2, instances=4, draw=2, visits=0), "leave it out"),
])
def test_bad_arguments_say_what_to_do(kwargs, hint):
    with pytest.raises(ValueError, match=hint):
        InstanceDrawSampler(**kwargs)


def test_oracle_two_fork_workers_yield_exactly_what_num_workers_0_yields():
    def run(num_workers):
        sampler = InstanceDrawSampler(bags=8, instances=12, draw=3, shuffle=True, seed=5)
        loader = DataLoader(VisitEcho(), sampler=sampler, batch_size=None, num_workers=num_workers,
                            multiprocessing_context="fork" if num_workers else None)
        return [(bag, picked.tolist()) for bag, picked in loader], sampler.unused.clone()

    with_workers, state_with_workers = run(2)
    alone, state_alone = run(0)
    assert with_workers == alone
    assert torch.equal(state_with_workers, state_alone)
    assert len(set((bag, i) for bag, picked in alone for i in picked)) == 8 * 12
