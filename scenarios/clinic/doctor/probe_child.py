"""Not for people to run: the doctor's bounded probe (scenarios/clinic/doctor/probe.py starts it).

It builds the user's loader again (their function called once more, or the loader
unpickled), iterates a few batches with their own configuration, and reports what
it measured as one line per event, `clinic-probe {json}` (events.py), so that whatever it
measured before a hang, a crash or the doctor's time limit survives.  The doctor
runs it through supervise.py, which kills and reaps the whole tree afterwards.

Stages, each bounded in time (the doctor also watches the clock from outside):
  iterate    the loader as configured, through the grader's observer (observer.py): the first batch's
             time, bytes and tensors, each worker's USS, open descriptors and /dev/shm bytes after
             every full round of the workers, and a stream's samples by worker (duplicates across them);
             beside it, in a child forked first, the CUDA a worker would ask for (cuda_requests)
  compare    the same batches the other way round (num_workers=0, or 2 workers for a loader that
             has none): wall and CPU time per batch, and whether reading samples changed the
             dataset's own attributes (and what that means with workers: state_probe.py)
  draws      one index fetched by two workers over two epochs and twice in one process: do random
             draws repeat across workers or epochs?
  ranks      a stream only: read again as rank 0 and as rank 1 of a 2-rank job (probe_ranks.py)
"""
from __future__ import annotations

import faulthandler
import json
import os
import pickle
import resource
import sys
import time
import traceback
from pathlib import Path

import psutil
import torch
from torch.utils.data import DataLoader, IterableDataset

from scenarios.clinic.doctor import cuda_requests, events, state_probe
from scenarios.clinic.doctor.fingerprints import (attribute_fingerprints, batch_shape, cache_like, fingerprint,
                                                  per_worker)
from scenarios.clinic.doctor.probe_loaders import copy_of, doctor_made, shut_down
from scenarios.clinic.doctor.probe_ranks import read_as_ranks
from scenarios.clinic.observer import Observer
from scenarios.host import usable_cores
from scenarios.instruments import CpuWait, loader_memory_bytes, open_fd_count, process_memory_mb

MAX_BATCHES = 24
MAX_STREAM_BATCHES = 400   # an IterableDataset is read to its end where it is this short (13's count)


def emit(event: str, **fields) -> None:
    print(events.PREFIX + json.dumps(events.checked({"event": event, **fields}), default=str), flush=True)


# ---------------------------------------------------------------- building loaders


def build(order: dict) -> DataLoader:
    if order.get("target"):
        from scenarios.clinic.doctor.loading import BadInput, load_loader
        try:
            return load_loader(order["target"])[0]
        except BadInput as err:
            emit(events.BAD_INPUT, message=str(err))
            sys.exit(2)
    with open(order["pickled"], "rb") as stored:
        return pickle.load(stored)


# ---------------------------------------------------------------- the stages


def _read_memory(workers: list, n: int) -> float:
    """One MEMORY event; returns the seconds it took.  Reading /proc costs milliseconds per process:
    the caller keeps that time apart, so that the batch rate is the loader's, not the probe's."""
    began = time.perf_counter()
    uss = {worker.pid: round(measured[0], 2) for worker in workers if (measured := process_memory_mb(worker))}
    shm = loader_memory_bytes()[1] if os.path.exists("/proc/self/smaps_rollup") else None
    emit(events.MEMORY, n=n, uss=uss, fds=open_fd_count(), shm=shm)
    return time.perf_counter() - began


def _memory_due(count: int, workers: list, last_sample: float) -> bool:
    # Every full round of the first MAX_BATCHES (03 compares the first half's growth with the
    # second's), then every 0.3 s: a reading costs milliseconds a worker, a long stream many rounds.
    return bool(workers) and (count % len(workers) == 0 and count <= MAX_BATCHES
                              or time.perf_counter() - last_sample > 0.3)


def iterate(loader: DataLoader, budget_s: float, parent: tuple | None) -> dict:
    """`parent`: this process's memory before anything forked (what a forked worker could copy at most)."""
    iterable = isinstance(loader.dataset, IterableDataset)
    started, cpu_started = time.perf_counter(), time.process_time()
    iterator = iter(loader)  # starts the workers
    workers = [psutil.Process(w.pid) for w in getattr(iterator, "_workers", []) if w.pid]
    emit(events.WORKERS_STARTED, pids=[p.pid for p in workers], seconds=round(time.perf_counter() - started, 3),
         parent_uss=round(parent[0], 1) if parent else None)
    waits = CpuWait().start()  # how much of the time other work keeps this process and its workers off a CPU
    observer, hashes, by_worker = Observer(), [], {}
    count, measuring_s, last_sample, ended = 0, 0.0, -1.0, False

    def seen(batch, delivery) -> None:
        now = time.perf_counter() - started
        if delivery.n == 1:
            emit(events.FIRST_BATCH, seconds=round(now, 3), **batch_shape(batch))
        if iterable:  # a stream's samples, under the worker that made each (13's count)
            hashes.extend(_kept_by_worker(by_worker, delivery.worker, observer.fingerprints(batch)))
        emit(events.BATCH, n=delivery.n, seconds=round(now, 3), measuring_s=round(measuring_s, 3))

    for count in range(1, (MAX_STREAM_BATCHES if iterable else MAX_BATCHES) + 1):
        try:
            observer.deliver(iterator, iterator.__next__, seen)
        except StopIteration:
            count, ended = count - 1, True
            break
        if _memory_due(count, workers, last_sample):
            measuring_s += _read_memory(workers, count)
            last_sample = time.perf_counter()
        if time.perf_counter() - started - measuring_s > budget_s and count >= 3:
            break
    if count and workers:
        measuring_s += _read_memory(workers, count)
    result = {"batches": count, "seconds": round(time.perf_counter() - started, 3),
              "measuring_s": round(measuring_s, 3), "cpu_wait_share": round(waits.share(), 3),
              "cpu_seconds": round(time.process_time() - cpu_started, 3),
              "samples": len(hashes), "sample_hashes": hashes, "ended": ended, **per_worker(by_worker)}
    shut_down(iterator)
    del iterator
    return result


def _kept_by_worker(by_worker: dict, worker: int | None, samples: list) -> list:
    """A stream's samples, kept under the worker that made them ('?' where torch did not say)."""
    by_worker.setdefault(str("?" if worker is None else worker), []).extend(samples)
    return samples


def compare(loader: DataLoader, batches: int, budget_s: float, first_batch: bool = False,
            initial: dict | None = None) -> dict:
    """The same first batches the other way: in this process, or (for a loader without workers)
    through 2 workers; did reading samples write to the dataset, and did the workers' writes reach this
    process (`initial`: its attributes before they read; state_probe.py)?  `first_batch`: none came yet."""
    workers = 0 if loader.num_workers else max(2, min(4, usable_cores()[0] or 2))
    before = attribute_fingerprints(loader.dataset) if not workers else {}
    watch = state_probe.Watch(loader, initial or {}) if not workers else None
    started, cpu_started = time.perf_counter(), time.process_time()
    iterator = doctor_made(lambda: iter(copy_of(loader, workers)))
    observer, hashes, firsts = Observer(), [], []

    def seen(batch, delivery) -> None:
        if delivery.n == 1:
            firsts.append(time.perf_counter() - started)
            if first_batch:
                emit(events.FIRST_BATCH, seconds=round(firsts[0], 3), **batch_shape(batch))
        if isinstance(loader.dataset, IterableDataset):
            hashes.extend(observer.fingerprints(batch))
        emit(events.TICK, n=delivery.n)  # progress: the doctor tells a slow stage from a stuck one

    count, ended = 0, False
    for count in range(1, max(batches, 1) + 1):
        try:
            observer.deliver(iterator, iterator.__next__, seen)
        except StopIteration:
            count, ended = count - 1, True
            break
        if time.perf_counter() - started > budget_s and count >= 2:
            break
    seconds = time.perf_counter() - started
    shut_down(iterator)
    del iterator
    return {"workers": workers, "batches": count, "seconds": round(seconds, 3),
            "first_batch_s": round(firsts[0] if firsts else 0.0, 3),
            "cpu_seconds": round(time.process_time() - cpu_started, 3),
            "samples": len(hashes), "sample_hashes": hashes, "ended": ended, **_written(loader, before, watch)}


def _written(loader: DataLoader, before: dict, watch) -> dict:
    """What reading in this process wrote to the dataset, and what the watch saw of it (none: workers read)."""
    if watch is None:
        return {"changed_attributes": [], "changed_caches": []}
    after = attribute_fingerprints(loader.dataset)
    changed = sorted(name for name in before if after.get(name) != before[name])
    caches = [name for name in changed if cache_like(loader.dataset, name)]
    return {"changed_attributes": changed, "changed_caches": caches,
            **watch.finish(loader.dataset, changed, before)}


def draws(loader: DataLoader, budget_s: float) -> dict | None:
    """Fetch one index DRAW_PAIRS times through each of two workers, and twice as often in this process:
    do two workers draw the same "random" numbers?  Stops at its budget (then too few pairs: no finding)."""
    if isinstance(loader.dataset, IterableDataset) or not loader.num_workers:
        return None
    started = time.perf_counter()
    sampler = loader.batch_sampler if loader.batch_sampler is not None else None
    first = next(iter(sampler))[0] if sampler is not None else next(iter(loader.sampler))
    batched = loader.batch_sampler is not None
    fetches = [[first]] * (2 * events.DRAW_PAIRS) if batched else [first] * (2 * events.DRAW_PAIRS)
    # Two workers take the fetches in turn (0, 1, 0, 1, …), and batches come back in that order.
    two = doctor_made(lambda: iter(copy_of(loader, 2, **({"batch_sampler": fetches} if batched
                                                          else {"sampler": fetches}))))
    delivered = []
    for batch in two:
        delivered.append(fingerprint(batch))
        if time.perf_counter() - started > budget_s / 2:
            break
    shut_down(two)
    emit(events.TICK, stage=events.DRAWS)
    in_process = []
    while len(in_process) < 2 * events.DRAW_PAIRS and time.perf_counter() - started < budget_s:
        sample = loader.dataset[first]
        in_process.append(fingerprint(loader.collate_fn([sample]) if batched else loader.collate_fn(sample)))
    return {"index": repr(first)[:60], "by_worker": [delivered[0::2], delivered[1::2]], "in_process": in_process}


def _run_stage(stage: str, loader: DataLoader, measured: dict, failed: bool, left: float,
               parent: tuple | None, rebuild=None, initial: dict | None = None) -> dict | None:
    if stage == events.RANKS:
        return read_as_ranks(loader, rebuild, (copy_of, shut_down, Observer.fingerprints), budget_s=min(3.0, left / 2))
    if stage == events.ITERATE:
        return iterate(loader, budget_s=min(4.0, left / 3), parent=parent)
    if stage == events.COMPARE:
        # After an error in the workers, the same samples read in this process give the error
        # as num_workers=0 shows it (often plainer), or show it does not happen.
        stream = isinstance(loader.dataset, IterableDataset) and measured.get("ended")
        return compare(loader, MAX_BATCHES if failed else MAX_STREAM_BATCHES if stream else measured["batches"],
                       budget_s=min(1.5 if failed else 3.0, left / 2), first_batch=not measured["batches"],
                       initial=initial)
    return draws(loader, budget_s=min(4.0, left))


def _emit_error(stage: str, err: BaseException) -> None:
    for _ in range(3):
        try:
            emit(events.ERROR, stage=stage, type=type(err).__name__, message=str(err),
                 own=getattr(err, "clinic_own", False), traceback="".join(traceback.format_exception(err))[-6000:])
            return
        except Exception as raised_meanwhile:
            # PyTorch's SIGCHLD handler raises wherever this process is when a worker dies, here too.
            err = raised_meanwhile


def _take_order(launcher: str) -> dict:
    order = json.loads(Path(launcher).with_name("order.json").read_text())
    # The doctor's current folder and sys.path: relative data paths and the dataset's modules
    # resolve as they do there (spawned workers inherit both from here).
    os.chdir(order.get("cwd") or os.getcwd())
    sys.path[:0] = [entry for entry in order.get("sys_path", []) if entry not in sys.path]
    return order


def _stages(order: dict, loader: DataLoader, built_s: float) -> tuple:
    """The stages for this loader; the ranks stage rebuilds a quick builder per rank (it may read RANK)."""
    rebuild = (lambda: build(order)) if order.get("target") and built_s < 1.0 else None
    ranks = (events.RANKS,) if isinstance(loader.dataset, IterableDataset) else ()
    return (events.ITERATE, events.COMPARE, events.DRAWS) + ranks, rebuild


def main(launcher: str) -> None:
    order, started = _take_order(launcher), time.perf_counter()
    emit(events.STARTED, pid=os.getpid(), fd_soft_limit=resource.getrlimit(resource.RLIMIT_NOFILE)[0],  # Linux only
         sharing_strategy=torch.multiprocessing.get_sharing_strategy())
    loader = build(order)
    emit(events.LOADED, seconds=round(built_s := time.perf_counter() - started, 3))
    stages, rebuild = _stages(order, loader, built_s)
    budget_s = order["budget_s"]
    # A sample that crashes this process (native code, compare stage): the fault handler prints its line.
    faulthandler.enable()
    parent = process_memory_mb(psutil.Process())  # before any fork shares its pages: what a worker may copy
    # The dataset's attributes before any worker reads: did the workers' writes reach this process (05)?
    initial = state_probe.attributes_before(loader)
    recording = cuda_requests.start(loader)
    measured, failed = {"batches": 0}, False
    for stage in stages:
        left = budget_s - (time.perf_counter() - started)
        if stage != events.ITERATE and left < 1:
            emit(events.SKIPPED, stage=stage, why=f"the probe's time was spent ({budget_s:.0f} s)")
            continue
        if failed and stage == events.DRAWS:
            break
        emit(events.STAGE, stage=stage)
        try:
            result = _run_stage(stage, loader, measured, failed, left, parent, rebuild, initial)
            measured = result if stage == events.ITERATE else measured
        except Exception as err:  # the user's error, whatever it is: the doctor maps it
            _emit_error(stage, err)
            if failed or stage != events.ITERATE:
                break
            failed = True
        else:
            emit(stage, **(result or {}))
        if stage == events.ITERATE:  # the CUDA asked for, recorded on the CPU beside this stage
            recorded = cuda_requests.finish(recording, lambda: emit(events.TICK, stage=events.ITERATE))
            emit(events.CUDA_REQUESTS, **recorded)
    emit(events.DONE, seconds=round(time.perf_counter() - started, 3))
    sys.stdout.flush()
    # No interpreter teardown: a stuck non-daemon thread of the user's code must not hold the probe open.
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else __file__)
