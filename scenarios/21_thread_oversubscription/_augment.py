"""The photos scenario 21 augments, and the census of its workers' threads.
Imported by broken.py, fixed.py and the measurements; not run on its own.

A census reads, for each worker of this process, every thread's CPU time from
/proc/PID/task/TID/stat (what `top -H` and `ps -L` show), once every worker has delivered
a batch and again at the last.  A thread counts as busy when it used at least BUSY_SHARE
of its worker's CPU time in between, and more than a tick or two: the main thread that
runs __getitem__, and the pool threads that OpenCV and the BLAS wake for it; not the
queue's feeder thread, nor pool threads started and left asleep.
"""
import os
import time

import numpy as np

from scenarios.host import cannot_run, usable_cores
from scenarios.instruments import thread_cpu_s, worker_pids

PHOTOS, SIZE, OUT, CROP, SAMPLES, BATCH = 4, 384, 640, 224, 32, 4
BUSY_SHARE, BUSY_MIN_S = 0.25, 0.02  # the kernel counts CPU time in ticks of 10 ms


def photos():
    """PHOTOS colour images of SIZE x SIZE, and a 3 x 3 colour-jitter matrix."""
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, (SIZE, SIZE, 3), dtype=np.uint8) for _ in range(PHOTOS)]
    return images, (np.eye(3) + rng.normal(0, 0.1, (3, 3))).astype(np.float32)


def one_worker_per_core() -> int:
    """As many workers as this process has cores: the usual advice, and the case where each
    worker's share of the machine is one core.  One core leaves nothing to oversubscribe."""
    cores, why = usable_cores()
    if cores < 2:
        cannot_run(f"{cores} core ({why}): a library pool sized for the machine is one thread, "
                   "as the fix would set it; run on a machine with 2 cores or more")
    return cores


def census(start: dict, end: dict) -> dict:
    """Threads of each worker, and those busy between two readings of thread_cpu_s: the
    steady state, without the one-off work of a worker's first batch."""
    threads, busy, cpu_s = {}, {}, {}
    for pid, now in end.items():
        used = {tid: s - start.get(pid, {}).get(tid, 0.0) for tid, s in now.items()}
        total = sum(used.values())
        threads[pid], cpu_s[pid] = len(now), sorted(used.values(), reverse=True)
        busy[pid] = sum(s >= BUSY_MIN_S and s >= BUSY_SHARE * total for s in used.values())
    return {"threads": threads, "busy": busy, "cpu_s": cpu_s}


def load_epoch(loader) -> dict:
    """Every batch of one epoch: samples per second over the whole epoch (the workers' start
    included, the same for every configuration; timing only later batches would time batches
    the workers had ready in advance), and the census of the workers' threads from the moment
    each worker has delivered a batch to the last batch (the workers exit when the loop asks
    for more).  A worker's first batch pays one-off costs: starting the queue's feeder
    thread, which then pickles for 70-90 ms once."""
    cores, _ = usable_cores()
    started = time.perf_counter()
    batches, samples = iter(loader), 0
    for _ in range(max(1, loader.num_workers)):
        samples += len(next(batches))
    start = {pid: thread_cpu_s(pid) for pid in worker_pids()}
    end = start
    for batch in batches:
        samples += len(batch)
        end = {pid: thread_cpu_s(pid) for pid in start}
    seconds = time.perf_counter() - started
    taken = census(start, end)
    busy = sum(taken["busy"].values())
    return {"cores": cores, "workers": loader.num_workers, "samples_per_s": samples / seconds,
            "threads_per_worker": max(taken["threads"].values()),
            "busy_threads_per_worker": max(taken["busy"].values()),
            "busy_threads_per_core": busy / cores, "census": taken}


def compare(configurations: dict, dataset, rounds: int = 3, samples: int = 12) -> dict:
    """Samples per second and workers' CPU seconds per sample of each configuration
    (name: worker_init_fn), one epoch of `samples` each, the configurations taking turns
    round after round so that a change in the machine's load falls on all of them."""
    from torch.utils.data import DataLoader

    cores, _ = usable_cores()
    runs = {name: [] for name in configurations}
    for _ in range(rounds):
        for name, init in configurations.items():
            loader = DataLoader(dataset, batch_size=BATCH, num_workers=cores, worker_init_fn=init,
                                sampler=range(samples))
            before = os.times()
            run = load_epoch(loader)  # its workers are joined when the epoch ends
            after = os.times()
            cpu = after.children_user + after.children_system - before.children_user - before.children_system
            runs[name].append((run["samples_per_s"], cpu / samples))
    return runs


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def report(run) -> None:
    """Each worker's threads, the figures the runner reads, and a one-line summary."""
    for pid, threads in run["census"]["threads"].items():
        cpu_ms = ", ".join(f"{1000 * s:.0f}" for s in sorted(run["census"]["cpu_s"][pid], reverse=True))
        print(f"worker {pid}: {threads} threads, {run['census']['busy'][pid]} of them busy "
              f"(CPU ms per thread: {cpu_ms})")
    for name in ("cores", "workers", "threads_per_worker", "busy_threads_per_worker",
                 "busy_threads_per_core", "samples_per_s"):
        print(f"metric {name}={run[name]:.3f}")
    print(f"{run['workers']} workers on {run['cores']} cores: {run['busy_threads_per_core']:.1f} busy "
          f"threads per core, {run['samples_per_s']:.1f} samples/s")
