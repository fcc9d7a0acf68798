"""What `doctor --pid` read of a job running now (running.py reads it), and the readings the
checks' `running(job)` hooks share: which workers are stuck, whether the trainer waits for data."""
from __future__ import annotations

import dataclasses
import re

from scenarios.clinic.doctor.stacks import frame_lines
from scenarios.threads import BUSY_MIN_S, busy_threads

FORK_SERVER = "multiprocessing.forkserver"
BUSY_CORE_SHARE = 0.1  # of one core over the window, for a thread to count as busy
SPAWNED = "multiprocessing.spawn"


@dataclasses.dataclass
class Worker:
    pid: int
    state: str
    threads: int
    cpu_s: list = dataclasses.field(default_factory=list)    # user + system seconds at each sample
    uss_mb: list = dataclasses.field(default_factory=list)   # private memory at each sample
    rss_mb: list = dataclasses.field(default_factory=list)   # resident memory, shared pages too, at each sample
    stack: str = ""
    thread_cpu_s: list = dataclasses.field(default_factory=list)  # {tid: CPU seconds} at each sample
    sampled_at: list = dataclasses.field(default_factory=list)    # time.monotonic() of each sample
    states: list = dataclasses.field(default_factory=list)  # its state at each sample ("running", "sleeping")
    settled: bool = False  # at its first sample, past its start-up (running.settled)
    ended: str = ""     # how it ended, once it has: "exited 0", "killed by SIGKILL", "reaped" (status unknown)
    # The kernel function its main thread sleeps in when its stack was read (/proc/PID/wchan):
    # "futex_…" a lock or a condition, "hrtimer_nanosleep" a time.sleep, "pipe_read" a read; "" unread.
    sleeps_in: str = ""
    catches_sigterm: bool | None = None  # a SIGTERM handler of its own (SigCgt) when last read; None: unread

    @property
    def waits_on_a_lock(self) -> bool:
        """Asleep in a futex (a lock, a condition, a semaphore), or where the kernel does not say."""
        return not self.sleeps_in or "futex" in self.sleeps_in

    @property
    def busy_threads(self) -> int:
        """Threads that each used at least a quarter of the worker's CPU and a tenth of a core over
        the window, and worked in both its halves (scenarios/threads.py): one per worker is a worker
        on one thread; more, pools that compete.  An idle worker's queue feeder, a few clock ticks
        in seconds, is no competitor (under load it reached a quarter of a near-idle worker's CPU)."""
        if len(self.thread_cpu_s) < 2:
            return 0
        core_tenth = BUSY_CORE_SHARE * (self.sampled_at[-1] - self.sampled_at[0])
        return len(busy_threads(self.thread_cpu_s, floor_s=max(BUSY_MIN_S, core_tenth)))

    @property
    def starved(self) -> bool:
        """Runnable at most samples yet given under half a core: the machine's other processes
        hold the cores; it waits for none of its own reads."""
        window = self.sampled_at[-1] - self.sampled_at[0] if len(self.sampled_at) > 1 else 0.0
        return self.states.count("running") * 2 > len(self.states) and self.cpu_share < 0.5 * window

    @property
    def cpu_share(self) -> float:
        return 0.0 if len(self.cpu_s) < 2 else self.cpu_s[-1] - self.cpu_s[0]


@dataclasses.dataclass
class Job:
    """What `doctor --pid` read of a job; the checks' `running(job)` judge it."""
    trainer: int
    command: str
    seconds: float                       # the window the samples span
    workers: list                        # Worker, DataLoader workers only
    gone: list                           # workers a signal killed (a zombie whose status says so)
    helpers: list                        # (pid, kind): fork server, shm manager, resource tracker
    trainer_stacks: list                 # the trainer's stack, sampled a few times over the window
    trainer_cpu_s: float
    fds: int | None
    fd_limit: int | None
    shm_bytes: int                       # torch's /dev/shm files of this job
    shm_total: int | None
    cgroup: dict                         # usage, limit, oom_kills where readable
    cores: int
    stacks_readable: bool
    fd_samples: list = dataclasses.field(default_factory=list)  # (seconds, open, torch's shm) at each sample
    why: str = ""                        # why this process was examined (trainers_below)
    # A loader's workers start with its epoch and, unless persistent, exit at its end: those that
    # ended by themselves (or were reaped before their status could be read), and those that started
    # after the window's first sample, are no finding and are judged by no rule.
    ended: list = dataclasses.field(default_factory=list)
    started: list = dataclasses.field(default_factory=list)
    # Reached from its launcher's PID (torchrun's agent, a shell): every rank below it was examined, so
    # a rank's wait is judged beside its peers'; given a rank's own PID, its peers were not seen.
    via_launcher: bool = False
    trainer_catches_sigterm: bool = False  # the training process has a SIGTERM handler (a graceful shutdown)

    @property
    def alive_workers(self) -> list:
        return [w for w in self.workers if w.state not in ("zombie", "dead")]


def waits_for_data(stack: str) -> bool:
    """The trainer's stack is inside the DataLoader waiting for a batch; not receiving one that came
    (torch rebuilding its storages, a descriptor fetched from the worker's resource sharer: a busy
    machine makes that slow, and the batch is already made)."""
    return bool(re.search(r"_next_data|_get_data|_try_get_data", stack)) and \
        bool(re.search(r"\b(get|poll|wait|select|_poll|recv)\b \((?:queues|connection|threading|selectors)", stack)) \
        and not re.search(r"rebuild_storage|resource_sharer", stack)


def idle_workers(job: Job) -> list:
    """Workers whose stack waits for their next index: none of them is making a batch."""
    return [w for w in job.workers if w.stack and _idle_in_worker_loop(w.stack)]


def stuck_workers(job: Job) -> list:
    """Workers that used no CPU over the window, stopped in the dataset's own code or in a
    threading wait: not waiting for an index, nor on I/O (a socket, a file: scenario 07's case), nor
    runnable and given no core (a machine busy with other work)."""
    return [w for w in job.workers if w.cpu_share < 0.05 * job.seconds and w.stack and not w.starved
            and not _idle_in_worker_loop(w.stack) and not _in_io(w.stack)]


_IO_MODULES = ("socket.py", "ssl.py", "selectors.py", "http/", "urllib", "requests/", "botocore/", "fsspec/", "io.py")


def _in_io(stack: str) -> bool:
    lines = frame_lines(stack)
    return bool(lines) and any(io in lines[0] for io in _IO_MODULES)


def _idle_in_worker_loop(stack: str) -> bool:
    """A worker with nothing to do waits for its next index: its innermost frame is the index
    queue's get (a poll on its pipe), not the dataset's code."""
    lines = frame_lines(stack)
    return bool(lines) and "_worker_loop" in stack and \
        any(where in lines[0] for where in ("queues.py", "connection.py", "selectors.py"))
