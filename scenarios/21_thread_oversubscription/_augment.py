"""The photos scenario 21 augments, and the census of its workers' threads.
Imported by broken.py, fixed.py and the measurements; not run on its own.

A census reads, for each worker of this process, every thread's CPU time from
/proc/PID/task/TID/stat (what `top -H` and `ps -L` show), once every worker has delivered
a batch and again after each batch.  A thread counts as busy when it used at least a quarter
of its worker's CPU time in that span, more than a tick or two, and in both its halves
(scenarios/threads.py): the main thread that runs __getitem__, and the pool threads that
OpenCV and the BLAS wake for it; not the queue's feeder thread, nor pool threads started,
run once and left asleep.
"""
import os
import time

import numpy as np

from scenarios.host import cannot_run, usable_cores
from scenarios.instruments import worker_pids
from scenarios.threads import busy_threads, middle_reading, thread_cpu_s, used

PHOTOS, SIZE, OUT, CROP, SAMPLES, BATCH = 4, 384, 640, 224, 64, 4


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


def census(readings: list) -> dict:
    """Threads of each worker, and those busy over readings of thread_cpu_s ({pid: reading})
    by scenarios/threads.py's rule: the steady state, without the one-off work of a worker's
    first batch.  Each thread's CPU over all of it, and over its second half (by CPU: the reading
    where the worker had done half of its work; a worker that ran ahead of the loop sits idle
    at the end)."""
    taken = {"threads": {}, "busy": {}, "cpu_s": {}, "late_cpu_s": {}}
    for pid in readings[0]:
        mine = [reading[pid] for reading in readings if pid in reading]
        taken["threads"][pid] = len(mine[-1])
        taken["busy"][pid] = len(busy_threads(mine))
        taken["cpu_s"][pid] = sorted(used(mine[0], mine[-1]).values(), reverse=True)
        middle = middle_reading(mine, ()) or mine[0]
        taken["late_cpu_s"][pid] = sorted(used(middle, mine[-1]).values(), reverse=True)
    return taken


def load_epoch(loader) -> dict:
    """Every batch of one epoch: samples per second over the whole epoch (the workers' start
    included, the same for every configuration; timing only later batches would time batches
    the workers had ready in advance), and the census of the workers' threads from the moment
    each worker has delivered a batch to the last batch (the workers exit when the loop asks
    for more).  A worker's first batch pays one-off costs: starting the queue's feeder
    thread, which then pickles for 60-90 ms once."""
    cores, _ = usable_cores()
    started = time.perf_counter()
    batches, samples = iter(loader), 0
    for _ in range(max(1, loader.num_workers)):
        samples += len(next(batches))
    pids = worker_pids()
    readings = [{pid: thread_cpu_s(pid) for pid in pids}]
    for batch in batches:
        samples += len(batch)
        readings.append({pid: thread_cpu_s(pid) for pid in pids})
    seconds = time.perf_counter() - started
    taken = census(readings)
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
    def ms(seconds):
        return ", ".join(f"{1000 * s:.0f}" for s in seconds)
    taken = run["census"]
    for pid, threads in taken["threads"].items():
        print(f"worker {pid}: {threads} threads, {taken['busy'][pid]} of them busy (CPU ms per thread: "
              f"{ms(taken['cpu_s'][pid])}; in the second half: {ms(taken['late_cpu_s'][pid])})")
    for name in ("cores", "workers", "threads_per_worker", "busy_threads_per_worker",
                 "busy_threads_per_core", "samples_per_s"):
        print(f"metric {name}={run[name]:.3f}")
    print(f"{run['workers']} workers on {run['cores']} cores: {run['busy_threads_per_core']:.1f} busy "
          f"threads per core, {run['samples_per_s']:.1f} samples/s")
