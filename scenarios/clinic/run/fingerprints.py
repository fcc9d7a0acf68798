"""What the grading hook (observe.py) reads of a batch, of a process's random state and of a
dataset's state: small fingerprints, so that the grade can compare what the model received, who
made it and from what, without keeping any of the data.  Loaded inside the attempt's processes:
it never touches the attempt's own random generators, and every failure is the caller's to swallow.
"""
from __future__ import annotations

import hashlib
import os
import sys

from scenarios.clinic.samples import batch_arrays


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def _generator_state(value):
    """A random generator's state, or None where `value` is not one."""
    kind = type(value).__module__ + "." + type(value).__name__
    if kind == "numpy.random._generator.Generator":
        return value.bit_generator.state
    if kind == "numpy.random.mtrand.RandomState":
        return value.get_state(legacy=False)
    if kind == "random.Random":
        return value.getstate()
    if kind == "torch.Generator":
        return value.get_state().numpy().tobytes()
    return None


def random_states(dataset) -> dict[str, str]:
    """This process's random states: Python's, numpy's and torch's global ones, and each generator the
    dataset (or a dataset it wraps) holds as an attribute, by name."""
    import random

    states = {"random": random.getstate()}
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        states["numpy"] = numpy.random.get_state(legacy=False)
    torch = sys.modules.get("torch")
    if torch is not None:
        states["torch"] = torch.random.get_rng_state().numpy().tobytes()
    states.update(_held_generators(dataset, "dataset", depth=3))
    return {name: _digest(state if isinstance(state, bytes) else repr(state).encode())
            for name, state in states.items()}


def _held_generators(owner, path: str, depth: int) -> dict:
    """The generators `owner` holds, by attribute path: on the dataset itself, on the dataset it wraps,
    and on what it holds in turn (an augmenter's `rng`, a Compose's transforms), `depth` levels down."""
    found = {}
    if depth == 0 or isinstance(owner, type) or type(owner).__module__ in ("builtins", "torch", "numpy"):
        return found
    for name, value in list(getattr(owner, "__dict__", {}).items())[:64]:
        state = _generator_state(value)
        if state is not None:
            found[f"{path}.{name}"] = state
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value[:16]):
                found.update(_held_generators(item, f"{path}.{name}[{i}]", depth - 1))
        elif hasattr(value, "__dict__") and not callable(getattr(value, "__array__", None)):
            found.update(_held_generators(value, f"{path}.{name}", depth - 1))
    return found


def dataset_state(dataset) -> str | None:
    """The dataset's plain settings (numbers, strings, flags: an epoch, a curriculum step), as one
    fingerprint; None when it has none.  A wrapper's (`.dataset`, as Subset and most wrappers name
    it) are its innermost dataset's: a wrapper may carry the epoch to the workers another way."""
    for _ in range(4):
        inner = getattr(dataset, "__dict__", {}).get("dataset")
        if inner is None:
            break
        dataset = inner
    plain = sorted((name, value) for name, value in getattr(dataset, "__dict__", {}).items()
                   if isinstance(value, (bool, int, float, str)))
    return _digest(repr(plain).encode()) if plain else None


def shm_used_mb(path: str = "/dev/shm") -> float | None:
    """What the tmpfs at /dev/shm holds now, as this process sees it (its own mount namespace's)."""
    try:
        stat = os.statvfs(path)
    except (OSError, AttributeError):
        return None
    return round((stat.f_blocks - stat.f_bfree) * stat.f_frsize / 2**20, 2)


def thread_locks(dataset, limit: int = 5000) -> set[int]:
    """The threading locks a worker reaches from its dataset through attributes and containers (ids),
    and from the globals of the dataset's module that hold instances of that module's own classes
    (a cache moved off the dataset into a module global is still the fork's copy)."""
    found, seen, todo = set(), set(), [dataset, *_own_globals(dataset)]
    while todo and len(seen) < limit:
        item = todo.pop()
        if id(item) in seen or isinstance(item, (str, bytes, int, float, bool, type(None))):
            continue
        seen.add(id(item))
        if type(item).__module__ == "_thread" and type(item).__name__ in ("lock", "RLock"):
            found.add(id(item))
            continue
        if isinstance(item, dict):
            todo.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            todo.extend(item)
        elif hasattr(item, "__dict__") and not isinstance(item, type) and type(item).__module__ != "numpy":
            todo.extend(vars(item).values())
    return found


def _own_globals(dataset) -> list:
    module = sys.modules.get(type(dataset).__module__)
    if module is None or module.__name__.startswith(("torch", "scenarios.clinic")):
        return []
    return [value for value in vars(module).values()
            if not isinstance(value, type) and getattr(type(value), "__module__", None) == module.__name__]


def sample_bytes(batch) -> float | None:
    """Bytes per sample in a batch: every tensor whose first dimension is the batch's, added up."""
    arrays = batch_arrays(batch)
    if not arrays or not len(arrays[0]):
        return None
    count = len(arrays[0])
    return round(sum(array.nbytes for array in arrays if len(array) == count) / count, 1)
