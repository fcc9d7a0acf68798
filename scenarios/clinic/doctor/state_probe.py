"""What scenario 05's check needs observed, not guessed from the code's shape (the probe's compare stage,
probe_child.py, calls it around its reads in one process):

  lost      the attributes the workers' reads left unchanged in the main process: after the iterate
            stage's batches through workers, the main process's copy is the one it had before
            (the user's own data only: no shared tensor, no library object's internals such as
            h5py's property cache or a Manager proxy's connection, whose content is elsewhere)
  grown     the attributes whose length the reads in one process made larger with data (a list of
            records, a cache of samples; not a dict of open files): what each worker adds to its own copy
  depends   whether what the dataset returns depends on the state the reads wrote: the same indices
            read with the same seeds, in a child forked before the reads (twice: a dataset that is
            not repeatable under fixed seeds gets no verdict) and in one forked after them

Forked children, not copies: a dataset holding an open file, a lock or a proxy may refuse deepcopy and
pickle; a fork is how the loader's own workers get it.  Each child is bounded in time and reaped.
"""
from __future__ import annotations

import itertools
import json
import numbers
import os
import random
import select
import signal
import sys
import time
from collections.abc import Mapping, Sequence, Set, Sized

import numpy as np
import torch
from torch.utils.data import IterableDataset

from scenarios.clinic.doctor.fingerprints import attribute_fingerprints, fingerprint
from scenarios.clinic.doctor.holdings import installed_class

READS = 4          # indices read before and after
CHILD_LIMIT_S = 2.0


def attributes_before(loader) -> dict:
    """The dataset's attribute fingerprints before any worker reads (none without workers)."""
    try:
        return attribute_fingerprints(loader.dataset) if loader.num_workers else {}
    except Exception:  # an attribute that cannot be read here: the compare stage reports it if it matters
        return {}


def sizes(dataset) -> dict[str, int]:
    """The length of each sized attribute, by attribute_fingerprints' paths (one level into wrapped objects)."""
    found = {}

    def visit(obj, path, level):
        for name, value in list(getattr(obj, "__dict__", {}).items()):
            where = f"{path}.{name}"
            if isinstance(value, Sized) and not isinstance(value, (str, bytes, torch.Tensor)):
                try:
                    found[where] = len(value)
                except Exception:  # a proxy whose server is gone, a lazily sized object: no length
                    pass
            if level < 1 and hasattr(value, "__getitem__") and hasattr(value, "__dict__"):
                visit(value, where, level + 1)
    visit(dataset, "dataset", 0)
    return found


def _seed(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed(seed)


def seeded_reads(dataset, indices: list, limit_s: float = CHILD_LIMIT_S) -> list | None:
    """Fingerprints of dataset[i] for `indices`, read with fixed seeds in a forked child; None where the
    child fails or runs past `limit_s` (it is killed and reaped)."""
    reading, writing = os.pipe()
    try:
        pid = os.fork()
    except OSError:  # no process left under this user's limit: no verdict
        os.close(reading)
        os.close(writing)
        return None
    if pid == 0:  # the child: read, report, and leave without running the parent's exit handlers
        os.close(reading)
        try:
            torch.set_num_threads(1)  # as a DataLoader worker does: the parent's OpenMP pool did not survive the fork
            digests = []
            for index in indices:
                _seed(1234)
                digests.append(fingerprint(dataset[index]))
            os.write(writing, json.dumps(digests).encode())
        finally:
            os._exit(0)
    os.close(writing)
    data, deadline = b"", time.monotonic() + limit_s
    try:
        while (left := deadline - time.monotonic()) > 0 and select.select([reading], [], [], left)[0]:
            chunk = os.read(reading, 65536)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(reading)
        if time.monotonic() >= deadline:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    try:
        return json.loads(data) if data else None
    except ValueError:
        return None


def _plain(value) -> bool:
    """Data the user's code keeps (a container, a number, an array, an object of their own class), not an
    object of a library whose internals change as it is read (h5py's property cache, a Manager proxy's
    connection: its content lives in the manager's process)."""
    if isinstance(value, (Mapping, Sequence, Set, numbers.Number, np.ndarray, torch.Tensor)):
        return True
    try:
        return not installed_class(type(value))
    except Exception:  # a class whose source cannot be located (made at run time): the user's
        return True


def _along(dataset, path: str) -> list:
    """The objects along an attribute path (attribute_fingerprints'), the dataset's own attribute first."""
    found, value = [], dataset
    for name in path.split(".")[1:]:
        value = getattr(value, name, None)
        found.append(value)
    return found


def _the_users(dataset, path: str) -> bool:
    return all(value is None or _plain(value) for value in _along(dataset, path))


def _holds_data(value) -> bool:
    """A container whose items (a sample of them) are plain data: records, samples; not open handles."""
    if not isinstance(value, Sized):
        return False
    return all(_plain(item) for item in itertools.islice(value.values() if isinstance(value, Mapping) else value, 16))


class Watch:
    """Started before the compare stage's reads in one process, finished after them.  `initial`: the
    dataset's attribute fingerprints before the iterate stage's workers read (empty: not known)."""

    def __init__(self, loader, initial: dict):
        dataset = loader.dataset
        self.initial, self.sizes, self.indices, self.fresh = initial, sizes(dataset), [], []
        if not isinstance(dataset, IterableDataset):
            try:
                self.indices = list(itertools.islice(iter(loader.sampler), READS))
            except Exception:  # a sampler that cannot be iterated again here: no verdict on dependence
                self.indices = []
        for _ in range(2 if self.indices else 0):  # a first read that fails or times out: no second
            if self.fresh[-1:] != [None]:
                self.fresh.append(seeded_reads(dataset, self.indices))

    def finish(self, dataset, changed: list, before: dict) -> dict:
        """`before`: the fingerprints just before the reads in one process; `changed`: what those reads changed."""
        changed = [name for name in changed if _the_users(dataset, name)]
        if not changed:
            return {}
        now = sizes(dataset)
        found = {"grown": [name for name in changed if now.get(name, 0) > self.sizes.get(name, 0)
                           and _holds_data(_along(dataset, name)[-1])],
                 "lost": [name for name in changed if self.initial.get(name) == before.get(name)]
                 if self.initial else [], "depends": None}
        first, again = (self.fresh + [None, None])[:2]
        if first is not None and first == again:  # repeatable under fixed seeds: a difference is the state's
            after = seeded_reads(dataset, self.indices)
            if after is not None:
                found["depends"] = sum(a != b for a, b in zip(first, after))
                found["reads"] = len(first)
        return found
