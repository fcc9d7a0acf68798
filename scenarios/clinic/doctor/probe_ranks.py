"""The probe's ranks stage: a stream read as rank 0 and as rank 1 of a 2-rank job would read it.

A map-style dataset is split between ranks by its sampler (15's check reads that); a stream
(IterableDataset) has none, so only its own code can split it, and that code asks for its rank
where it runs: webdataset's split_by_node and most hand-written splits read torchrun's RANK and
WORLD_SIZE, datasets' split_dataset_by_node is given them where the loader is built.  So each rank
here is the loader built again (the user's function called once more, or the same loader object)
and read with its own workers under the environment torchrun gives that rank.  No process group is
started: torch.distributed's get_rank, get_world_size and is_initialized answer as that rank's would
instead, so a split that asks torch.distributed (`if dist.is_initialized(): rank = dist.get_rank()`)
is read as it splits in a job; a collective the stream calls itself fails, and that rank's error says so.
Imported only by probe_child.py, inside the probe's process.
"""
from __future__ import annotations

import contextlib
import os
import time
import traceback

import torch.distributed as dist
from torch.utils.data import IterableDataset

WORLD_SIZE = 2
MAX_SAMPLES = 4096   # a longer stream is compared on its first samples


@contextlib.contextmanager
def _replaced(module, name: str, value):
    had = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, had)


@contextlib.contextmanager
def _as_rank(rank: int):
    names = {"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(WORLD_SIZE),
             "LOCAL_WORLD_SIZE": str(WORLD_SIZE)}
    before = {name: os.environ.get(name) for name in names}
    os.environ.update(names)
    answers = {"get_rank": lambda *_, **__: rank, "get_world_size": lambda *_, **__: WORLD_SIZE,
               "is_initialized": lambda: True}
    try:
        with contextlib.ExitStack() as patched:
            for name, answer in answers.items():  # forked workers inherit them; spawned ones read the env
                patched.enter_context(_replaced(dist, name, answer))
            yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _read(loader, copy_of, shut_down, fingerprints, until: float) -> dict:
    iterator = iter(copy_of(loader, loader.num_workers))
    hashes, ended = [], False
    try:
        while len(hashes) < MAX_SAMPLES and time.perf_counter() < until:
            try:
                batch = next(iterator)
            except StopIteration:
                ended = True
                break
            hashes += fingerprints(batch)
    finally:
        shut_down(iterator)
    return {"samples": len(hashes), "hashes": hashes, "ended": ended}


def read_as_ranks(loader, rebuild, tools: tuple, budget_s: float) -> dict | None:
    """Each rank's samples (their fingerprints), or its error; None for a map-style dataset.
    `rebuild()` builds the user's loader again (None where it was handed over as an object);
    `tools`: the probe's copy_of, shut_down and the observer's fingerprints."""
    if not isinstance(loader.dataset, IterableDataset):
        return None
    copy_of, shut_down, fingerprints = tools
    ranks = []
    for rank in range(WORLD_SIZE):
        until = time.perf_counter() + budget_s / WORLD_SIZE  # each rank its half, a slow first one too
        with _as_rank(rank):
            try:
                mine = rebuild() if rebuild else loader
                ranks.append(_read(mine, copy_of, shut_down, fingerprints, until))
            except Exception as err:  # the user's code refusing a second rank is what this stage is for
                ranks.append({"error": f"{type(err).__name__}: {err}",
                              "traceback": "".join(traceback.format_exception(err))[-3000:]})
    return {"world_size": WORLD_SIZE, "ranks": ranks, "rebuilt": rebuild is not None}
