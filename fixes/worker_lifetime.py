"""Tie each DataLoader worker's life to the training process that started it.
Fixes scenario 20 (workers outliving a training job killed by SIGKILL).

A job killed with SIGKILL (the OOM killer, a scheduler signalling the job's main
pid, `kill -9`) runs no clean-up: nobody tells its workers.  PyTorch's own check
in each worker compares os.getppid() with the pid it saw at start; that misses
a worker stuck on its way out (a full pipe, under fork) and every worker whose
parent is the fork server (forkserver, Python 3.14's default on Linux), which
lives on as long as they do.  Use:

    loader = DataLoader(..., worker_init_fn=DieWithTrainer())
    loader = DataLoader(..., worker_init_fn=DieWithTrainer(then=your_worker_init_fn))

Build it in the training process (it records that process's pid then).  In each
worker it makes the kernel send SIGKILL when the trainer dies
(prctl(PR_SET_PDEATHSIG)) where the trainer is the worker's parent, and
otherwise watches the trainer from a thread (a pidfd, Linux 5.3+; /proc
polled where there is none) and kills the worker itself.  Linux only; elsewhere
it does nothing but call `then`.

Caveat of PR_SET_PDEATHSIG: it fires when the *thread* that forked the worker
ends.  Create the DataLoader's iterator in a thread that lives as long as the
workers (the main thread, as usual), or the workers die with that thread.
"""
from __future__ import annotations

import ctypes
import os
import select
import signal
import sys
import threading
from collections.abc import Callable

PR_SET_PDEATHSIG = 1
POLL_S = 0.5  # how often /proc is read where the kernel has no pidfd


def _start_time(pid: int) -> int | None:
    """When `pid` started, in clock ticks since boot (field 22 of /proc/PID/stat): with the
    pid it names one process, even after the pid is reused.  None if no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return int(stat.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)  # as the trainer died: no finalizer may block the exit


def _wait_for_exit(pid: int, started: int) -> None:
    """Return once the process (pid, started) is gone."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # Python < 3.9, Linux < 5.3, or already gone
        pidfd = None
    if pidfd is not None:
        if _start_time(pid) == started:  # the pidfd names the trainer, not a reuse of its pid
            watch = select.poll()
            watch.register(pidfd, select.POLLIN)
            watch.poll()  # returns once the process has exited
        os.close(pidfd)
        return
    while _start_time(pid) == started:
        threading.Event().wait(POLL_S)


class DieWithTrainer:
    """A worker_init_fn that ends the worker when the process that built it ends."""

    def __init__(self, then: Callable[[int], None] | None = None):
        self.trainer_pid = os.getpid()
        self.trainer_started = _start_time(self.trainer_pid)
        self.then = then

    def __call__(self, worker_id: int) -> None:
        if sys.platform.startswith("linux") and self.trainer_started is not None:
            self.tie_to_trainer()
        if self.then is not None:
            self.then(worker_id)

    def tie_to_trainer(self) -> None:
        if os.getppid() == self.trainer_pid:  # fork, spawn: the kernel does it
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed: this worker would "
                              "outlive a killed job; have the scheduler kill the job's process group")
            if os.getppid() != self.trainer_pid:  # it died before the prctl: no signal will come
                _die()
            return
        # forkserver: the parent is the fork server, which outlives the trainer.
        if _start_time(self.trainer_pid) != self.trainer_started:
            _die()
        watch = threading.Thread(target=self._die_after_trainer, name="die-with-trainer", daemon=True)
        watch.start()

    def _die_after_trainer(self) -> None:
        _wait_for_exit(self.trainer_pid, self.trainer_started)
        _die()
