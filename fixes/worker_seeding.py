"""reseed_dataset_generators: a worker_init_fn that gives each DataLoader worker
its own random stream.  Fixes scenario 12 (every worker draws the same "random"
augmentations).

A dataset that makes its own generator in `__init__` (a numpy Generator or
RandomState, a `random.Random`, a `torch.Generator`), seeded once "for
reproducibility", hands every worker an identical copy of it: copied by fork,
or pickled into each worker by spawn and forkserver.  Worker k's i-th sample
then gets the crop, flip and jitter of worker 0's i-th, and, with workers that
are started anew each epoch, every epoch replays the first.  PyTorch reseeds
the *global* `random`, `torch` and `numpy.random` states in each worker, but it
cannot know about a generator stored on your dataset.

    from fixes.worker_seeding import reseed_dataset_generators
    loader = DataLoader(dataset, num_workers=4, worker_init_fn=reseed_dataset_generators)

In each worker it finds the generators stored on that worker's copy of the
dataset (attributes, and those of objects it holds such as transforms or a
wrapped dataset: `Subset.dataset`, `ConcatDataset.datasets`) and reseeds each
in place from `get_worker_info().seed`, which differs per worker and per epoch,
mixed with the generator's attribute path so that two generators of one
dataset do not produce the same stream.  In place, so that a transform holding
the same generator object sees the new state too.  The draws stay
reproducible: that seed comes from the main process's torch RNG, so
`torch.manual_seed(s)` (or `DataLoader(generator=...)`) fixes them.  With
`num_workers=0` no worker_init_fn runs and the `__init__` seed is used.

Already have a worker_init_fn?  Call `reseed_dataset_generators(worker_id)`
from it.  Without this module, the recipe for one known attribute is:

    def reseed(worker_id):
        info = torch.utils.data.get_worker_info()
        info.dataset.rng = np.random.default_rng(info.seed)
"""
from __future__ import annotations

import hashlib
import random
import types
import warnings
from typing import Any

import torch
from torch.utils.data import get_worker_info

try:
    import numpy as np
except ImportError:  # numpy is optional: its generators are then simply not looked for
    np = None

# How far below the dataset to look, and how many items of one list or dict to look at:
# enough for transforms and wrapped datasets, not a walk through a list of a million paths.
MAX_DEPTH = 6
MAX_ITEMS = 100
_LEAVES = (str, bytes, int, float, complex, bool, type(None), type, types.ModuleType,
           types.FunctionType, types.BuiltinFunctionType, types.MethodType, torch.Tensor)


def stream_seed(seed: int, name: str) -> int:
    """A 64-bit seed for the generator at attribute path `name`, derived from `seed`."""
    digest = hashlib.blake2b(f"{seed}:{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def reseed_generator(generator: Any, seed: int) -> bool:
    """Reseed `generator` in place from the 64-bit `seed`; False if it is not a generator we know."""
    if isinstance(generator, random.SystemRandom):
        return False  # draws from the OS, differs per process already, and cannot be seeded
    if isinstance(generator, random.Random):
        generator.seed(seed)
        return True
    if isinstance(generator, torch.Generator):
        generator.manual_seed(seed)
        return True
    if np is not None:
        if isinstance(generator, np.random.Generator):
            bits = generator.bit_generator  # PCG64 by default; keep whichever kind it is
            bits.state = type(bits)(np.random.SeedSequence(seed)).state
            return True
        if isinstance(generator, np.random.RandomState):
            generator.seed([seed & 0xFFFFFFFF, seed >> 32])
            return True
    return False


def _children(value: Any, name: str):
    if isinstance(value, dict):
        return [(f"{name}[{key!r}]", item) for key, item in list(value.items())[:MAX_ITEMS]]
    if isinstance(value, (list, tuple)):
        return [(f"{name}[{i}]", item) for i, item in enumerate(value[:MAX_ITEMS])]
    if isinstance(value, _LEAVES) or (np is not None and isinstance(value, np.ndarray)):
        return []
    attributes = getattr(value, "__dict__", None)
    return [(f"{name}.{key}", item) for key, item in attributes.items()] if isinstance(attributes, dict) else []


def reseed_generators(root: Any, seed: int, name: str = "dataset") -> list[str]:
    """Reseed every generator found on `root` (and up to MAX_DEPTH levels below it), each from
    `seed` and its attribute path; returns those paths, e.g. ["dataset.rng", "dataset.transform.rng"]."""
    found, seen = [], set()
    pending = [(name, root, 0)]
    while pending:
        path, value, depth = pending.pop(0)
        if id(value) in seen:
            continue  # one generator held in two places is reseeded once
        seen.add(id(value))
        if reseed_generator(value, stream_seed(seed, path)):
            found.append(path)
        elif depth < MAX_DEPTH:
            pending += [(child_path, child, depth + 1) for child_path, child in _children(value, path)]
    return found


def reseed_dataset_generators(worker_id: int) -> None:
    """worker_init_fn: reseed the generators stored on this worker's copy of the dataset from
    `get_worker_info().seed`, different in every worker and every epoch."""
    info = get_worker_info()
    if info is None:
        raise RuntimeError("reseed_dataset_generators is a worker_init_fn: pass it as "
                           "DataLoader(..., num_workers=N, worker_init_fn=reseed_dataset_generators); "
                           "in the main process there is no worker seed to use")
    if not reseed_generators(info.dataset, info.seed):
        warnings.warn(f"reseed_dataset_generators (worker {worker_id}): no numpy, random or torch "
                      f"generator found on {type(info.dataset).__name__} within {MAX_DEPTH} levels; "
                      "nothing was reseeded. If the dataset makes its generator later (in __getitem__), "
                      "seed it there from torch.utils.data.get_worker_info().seed", stacklevel=2)
