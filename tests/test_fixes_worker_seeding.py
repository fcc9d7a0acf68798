"""Unit tests for fixes/worker_seeding.py (scenario 12: every worker draws the same augmentations)."""
import random
import types

import numpy as np
import pytest
import torch
from torch.utils.data import ConcatDataset, DataLoader, Dataset, Subset

from fixes import worker_seeding
from fixes.worker_seeding import (MAX_ITEMS, reseed_dataset_generators, reseed_generator,
                                  reseed_generators)


def first_draws(generator, n=4):
    """n draws from any of the four kinds of generator, as plain floats."""
    if isinstance(generator, random.Random):
        return [generator.random() for _ in range(n)]
    if isinstance(generator, torch.Generator):
        return torch.rand(n, generator=generator, dtype=torch.float64).tolist()
    if isinstance(generator, np.random.RandomState):
        return generator.rand(n).tolist()
    return generator.random(n).tolist()


KINDS = {
    "numpy Generator": lambda: np.random.default_rng(0),
    "numpy Generator (Philox)": lambda: np.random.Generator(np.random.Philox(0)),
    "numpy RandomState": lambda: np.random.RandomState(0),
    "random.Random": lambda: random.Random(0),
    "torch.Generator": lambda: torch.Generator().manual_seed(0),
}


@pytest.mark.parametrize("make", KINDS.values(), ids=KINDS.keys())
def test_each_kind_is_reseeded_in_place_to_a_stream_of_its_seed(make):
    untouched = first_draws(make())
    a, b, again = make(), make(), make()
    kind = type(a.bit_generator) if isinstance(a, np.random.Generator) else None
    for generator, seed in ((a, 1), (b, 2), (again, 1)):
        assert reseed_generator(generator, seed) is True
    assert kind is None or type(a.bit_generator) is kind  # Philox stays Philox
    draws_a, draws_b, draws_again = first_draws(a), first_draws(b), first_draws(again)
    assert draws_a == draws_again  # the same seed gives the same stream: runs stay reproducible
    assert draws_a != draws_b and draws_a != untouched


def test_a_64_bit_seed_is_accepted_by_every_kind():
    for make in KINDS.values():
        assert reseed_generator(make(), 2**64 - 1)


def test_what_is_not_a_seedable_generator_is_left_alone():
    assert reseed_generator(random.SystemRandom(), 1) is False
    assert reseed_generator(object(), 1) is False
    assert reseed_generator(np.zeros(3), 1) is False


class Flip:
    def __init__(self, rng):
        self.rng = rng


class Pipeline(Dataset):
    def __init__(self):
        self.rng = np.random.default_rng(0)
        self.jitter = torch.Generator().manual_seed(0)
        self.transforms = [Flip(self.rng), Flip(random.Random(0))]  # one generator held twice
        self.options = {"noise": np.random.RandomState(0)}

    def __len__(self):
        return 4

    def __getitem__(self, index):
        return index


def test_finds_generators_on_the_dataset_its_transforms_and_wrapped_datasets():
    dataset = Pipeline()
    found = reseed_generators(dataset, 7)
    assert sorted(found) == ["dataset.jitter", "dataset.options['noise']", "dataset.rng",
                             "dataset.transforms[1].rng"]
    # A generator held in two places is reseeded once, and both places see it.
    assert dataset.transforms[0].rng is dataset.rng
    wrapped = ConcatDataset([Subset(Pipeline(), [0, 1]), Pipeline()])
    assert len(reseed_generators(wrapped, 7)) == 8


def test_two_generators_of_one_dataset_get_different_streams():
    dataset = types.SimpleNamespace(a=np.random.default_rng(0), b=np.random.default_rng(0))
    reseed_generators(dataset, 3)
    assert first_draws(dataset.a) != first_draws(dataset.b)


def test_long_lists_are_not_walked_past_max_items():
    dataset = types.SimpleNamespace(paths=[f"{i}.jpg" for i in range(MAX_ITEMS)] + [random.Random(0)])
    assert reseed_generators(dataset, 3) == []


def test_in_the_main_process_it_says_how_to_use_it():
    with pytest.raises(RuntimeError, match=r"worker_init_fn=reseed_dataset_generators"):
        reseed_dataset_generators(0)


def test_a_dataset_without_generator_gets_a_warning_that_says_what_to_do(monkeypatch):
    info = types.SimpleNamespace(dataset=types.SimpleNamespace(paths=["a.jpg"]), seed=5)
    monkeypatch.setattr(worker_seeding, "get_worker_info", lambda: info)
    with pytest.warns(UserWarning, match=r"no numpy, random or torch generator found.*get_worker_info\(\)\.seed"):
        reseed_dataset_generators(0)


class FourGenerators(Dataset):
    """One draw from each kind of generator per sample.  Seeded from the OS's entropy, not from
    a constant: the workers still copy one state, made before they started."""

    def __init__(self):
        self.numpy = np.random.default_rng()
        self.legacy = np.random.RandomState()
        self.python = random.Random()
        self.torch = torch.Generator()
        self.torch.seed()

    def __len__(self):
        return 32

    def __getitem__(self, index):
        return torch.tensor([self.numpy.random(), self.legacy.rand(), self.python.random(),
                             torch.rand(1, generator=self.torch).item()], dtype=torch.float64)


def epochs_of_draws(worker_init_fn, epochs=2):
    loader = DataLoader(FourGenerators(), batch_size=4, num_workers=2, multiprocessing_context="fork",
                        worker_init_fn=worker_init_fn)
    return [torch.cat(list(loader)) for _ in range(epochs)]  # per epoch: 32 samples x 4 kinds


@pytest.mark.parametrize("fixed", [False, True], ids=["without the fix", "with the fix"])
def test_forked_workers_draw_apart_only_with_the_fix(fixed):
    torch.manual_seed(0)
    first, second = epochs_of_draws(reseed_dataset_generators if fixed else None)
    for kind in range(4):
        within = len(set(first[:, kind].tolist()))
        across = set(first[:, kind].tolist()) & set(second[:, kind].tolist())
        if fixed:
            assert within == 32 and not across
        else:  # both workers replay one stream, and the next epoch replays it again
            assert within == 16 and len(across) == 16


def test_the_fixed_draws_are_reproducible_from_torch_manual_seed():
    torch.manual_seed(1)
    run = epochs_of_draws(reseed_dataset_generators, epochs=1)[0]
    torch.manual_seed(1)
    again = epochs_of_draws(reseed_dataset_generators, epochs=1)[0]
    torch.manual_seed(2)
    other = epochs_of_draws(reseed_dataset_generators, epochs=1)[0]
    assert torch.equal(run, again) and not torch.equal(run, other)
