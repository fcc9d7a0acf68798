"""One observer of a DataLoader's iterator, in the process that iterates it, for both places that
watch one: the grader's hook (run/loop_hook.py, around an attempt's own loop) and the doctor's probe
(doctor/probe_child.py, around the loop it drives).  For each batch it says how long the loop
waited inside next(), the loop's own time and its thread's CPU since the batch before, the samples
in it and the worker that made it; `fingerprints` is the one fingerprint of its samples (samples.py).
So the grade and the doctor tell a waiting loop, a busy one and a repeated sample alike.

Loaded inside an attempt's processes: it imports neither torch nor numpy, keeps no batch, and
costs two clock readings and a copy of torch's few outstanding task records a batch.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

from scenarios.clinic.samples import sample_fingerprints


@dataclass(frozen=True)
class Delivery:
    """One batch as the loop received it."""
    n: int                 # its place in this iteration, from 1
    waited_s: float        # the loop's time inside next() for it
    step_s: float | None   # the loop's own time since the batch before returned (None: the first)
    cpu_s: float | None    # the iterating thread's CPU in that time (a thread pool's is not its)
    samples: int
    worker: int | None     # the worker that made it, from torch's task records; None without workers


class Observer:
    """Call `deliver(iterator, step, then)` in place of `step()`, the iterator's own next: the batch.
    `then(batch, delivery)` is the watcher's own work on it, done before the loop's clock starts
    again: its cost is the watcher's, not the loop's.  Running sums (`waited_s`, `steady_waited_s`,
    `step_s`, `cpu_s`, `batches`, `samples`) cover this iteration; an iterator a forked process
    inherited starts its own.  It holds no reference to the iterator: the iterator, which holds it,
    is freed as the loop drops it, and its workers end then, not at the next garbage collection."""

    def __init__(self):
        self._begin()

    def _begin(self) -> None:
        self.pid = os.getpid()
        self.batches = self.samples = 0
        self.waited_s = self.steady_waited_s = self.step_s = self.cpu_s = 0.0
        self._returned: float | None = None
        self._cpu: float | None = None

    def deliver(self, iterator, step, then=None):
        try:
            if self.pid != os.getpid():
                self._begin()
            tasks = dict(getattr(iterator, "_task_info", None) or {})  # next() pops its batch's: read before
        except Exception:
            tasks = {}
        called, cpu = time.monotonic(), time.thread_time()
        batch = step()  # StopIteration and errors pass through untouched
        try:
            delivery = self._count(batch, called, cpu, tasks, getattr(iterator, "_rcvd_idx", 0))
        except Exception:  # the observer's own failure never costs the loop its batch
            delivery = None
        if then is not None and delivery is not None:
            then(batch, delivery)  # what it raises is the watcher's to handle, as its own code's
        self._returned, self._cpu = time.monotonic(), time.thread_time()
        return batch

    def _count(self, batch, called: float, cpu: float, tasks: dict, received: int) -> Delivery:
        now = time.monotonic()
        try:
            count = batch_samples(batch)
        except Exception:  # a batch whose shape cannot be read: a batch still, of one sample as any unknown
            count = 1
        worker = tasks.get(received - 1, (None,))[0]
        step_s = cpu_s = None
        if self._returned is not None:  # the loop's own work since the batch before
            step_s, cpu_s = called - self._returned, cpu - self._cpu
            self.step_s += step_s
            self.cpu_s += cpu_s
            self.steady_waited_s += now - called  # the steady state: the first batch also starts workers
        self.batches += 1
        self.waited_s += now - called
        self.samples += count
        return Delivery(self.batches, now - called, step_s, cpu_s, count, worker)

    @staticmethod
    def fingerprints(batch, fields: list | None = None) -> list[str]:
        return sample_fingerprints(batch, fields)


def batch_samples(batch) -> int:
    """Samples in a batch: the first dimension of its first tensor or array, or its length."""
    for _ in range(4):
        shape = getattr(batch, "shape", None)
        if shape is not None:
            return int(shape[0]) if len(shape) else 1
        if isinstance(batch, dict) and batch:
            batch = next(iter(batch.values()))
        elif isinstance(batch, (list, tuple)) and batch:
            if not isinstance(batch[0], (list, tuple, dict)) and getattr(batch[0], "shape", None) is None:
                return len(batch)
            batch = batch[0]
        else:
            break
    return 1
