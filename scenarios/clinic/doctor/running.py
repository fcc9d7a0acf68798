"""A training job running now, examined without stopping, slowing or changing it.

    python -m scenarios doctor --pid PID [--seconds N] [--json]

Reads /proc (through psutil) and the stacks (py-spy dump --nonblocking: the process is not
paused); sends no signal and writes nothing to the job.  A worker's PID given by mistake leads
to its training process.  The checks' `running(job)` parts turn what was read into findings.
"""
from __future__ import annotations

import dataclasses
import re
import shutil
import time
from pathlib import Path

import psutil

from scenarios.host import usable_cores
from scenarios.instruments import (CLOCK_TICKS, helper_kind, process_memory_mb, shm_file_creator, thread_cpu_s,
                                   torch_shm_files)

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
    stack: str = ""
    thread_cpu_s: list = dataclasses.field(default_factory=list)  # {tid: CPU seconds} at each sample
    sampled_at: list = dataclasses.field(default_factory=list)    # time.monotonic() of each sample

    @property
    def busy_threads(self) -> int:
        """Threads that each used at least a quarter of the worker's CPU and a tenth of a core over
        the window: one per worker is a worker on one thread; more, pools that compete.  An idle
        worker's queue feeder, a few clock ticks in seconds, is no competitor (under load it
        reached a quarter of a near-idle worker's CPU)."""
        if len(self.thread_cpu_s) < 2:
            return 0
        first, last = self.thread_cpu_s[0], self.thread_cpu_s[-1]
        used = {tid: last[tid] - first.get(tid, 0.0) for tid in last}
        total = sum(used.values())
        core_tenth = BUSY_CORE_SHARE * (self.sampled_at[-1] - self.sampled_at[0])
        return sum(1 for s in used.values() if s >= max(1.99 / CLOCK_TICKS, 0.25 * total, core_tenth))  # 2 ticks

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
    gone: list                           # workers found dead or zombie
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

    @property
    def alive_workers(self) -> list:
        return [w for w in self.workers if w.state not in ("zombie", "dead")]


def _command(proc: psutil.Process) -> str:
    try:
        return " ".join(proc.cmdline())
    except psutil.Error:
        return ""


def trainer_of(pid: int) -> int:
    """The training process: `pid` itself, or, for a worker or a fork server, the process above."""
    proc = psutil.Process(pid)
    for _ in range(3):
        parent = proc.parent()
        if parent is None:
            return proc.pid
        command, above = _command(proc), _command(parent)
        is_worker = SPAWNED in command or FORK_SERVER in command or FORK_SERVER in above or \
            (command and command == above and "torch" in _maps(proc.pid))
        if not is_worker:
            return proc.pid
        proc = parent
    return proc.pid


def _maps(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return ""


def workers_of(trainer: psutil.Process) -> tuple[list, list]:
    """(worker processes, helper (pid, kind)): children, and the fork server's children."""
    workers, helpers = [], []
    for child in trainer.children():
        kind = helper_kind(child.pid)
        if kind == FORK_SERVER:
            helpers.append((child.pid, kind))
            workers += child.children()
        elif kind:
            helpers.append((child.pid, kind))
        elif "python" in _command(child) or "torch" in _maps(child.pid):
            workers.append(child)
    return workers, helpers


def fd_soft_limit(pid: int) -> int | None:
    """The process's own RLIMIT_NOFILE (soft), as /proc/PID/limits shows it."""
    try:
        for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
            if line.startswith("Max open files"):
                value = line.split()[3]
                return None if value == "unlimited" else int(value)
    except (OSError, ValueError, IndexError):
        pass
    return None


def cgroup_memory(pid: int) -> dict:
    """The job's memory cgroup: usage, limit and the kernel's OOM-kill count (v2 or v1)."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return {}
    for line in lines:
        _, controllers, path = line.split(":", 2)
        base = Path("/sys/fs/cgroup") / path.lstrip("/") if controllers == "" else \
            Path("/sys/fs/cgroup/memory") / path.lstrip("/") if "memory" in controllers.split(",") else None
        if base is None or not base.is_dir():
            continue
        v2 = controllers == ""
        read = {"usage": "memory.current" if v2 else "memory.usage_in_bytes",
                "limit": "memory.max" if v2 else "memory.limit_in_bytes"}
        found = {}
        for key, name in read.items():
            try:
                text = (base / name).read_text().strip()
                found[key] = None if text == "max" or int(text) >= 2**60 else int(text)
            except (OSError, ValueError):
                pass
        events = base / ("memory.events" if v2 else "memory.oom_control")
        match = re.search(r"oom_kill (\d+)", events.read_text()) if events.is_file() else None
        if match:
            found["oom_kills"] = int(match.group(1))
        if found:
            return found
    return {}


def _sample(workers: list, procs: dict) -> None:
    for worker in workers:
        proc = procs[worker.pid]
        try:
            times = proc.cpu_times()
            worker.cpu_s.append(times.user + times.system)
            memory = process_memory_mb(proc)
            if memory:
                worker.uss_mb.append(memory[0])
            worker.state, worker.threads = proc.status(), proc.num_threads()
            worker.thread_cpu_s.append(thread_cpu_s(worker.pid))
            worker.sampled_at.append(time.monotonic())
        except psutil.Error:
            worker.state = "dead"


STACKS_BUDGET_S = 7.0   # py-spy reads after the window: with the default 6 s window, an answer within 15 s


def read_job(pid: int, seconds: float = 6.0, stacks: bool = True) -> Job:
    """Sample the job for `seconds`: workers' CPU and private memory, the trainer's stack a few times;
    then the workers' stacks, as many as STACKS_BUDGET_S allows (a loaded machine slows py-spy)."""
    from scenarios.clinic.run.supervise import stack_of

    trainer = psutil.Process(trainer_of(pid))
    if trainer.status() == psutil.STATUS_ZOMBIE:  # ended, not yet reaped by its parent
        raise psutil.NoSuchProcess(pid)
    found, helpers = workers_of(trainer)
    procs = {p.pid: p for p in found}
    workers = [Worker(p.pid, "?", 0) for p in found]
    trainer_stacks, started = [], time.monotonic()
    trainer_cpu = sum(trainer.cpu_times()[:2])
    rounds = 3
    for i in range(rounds):
        _sample(workers, procs)
        if stacks:
            trainer_stacks.append(stack_of(trainer.pid, nonblocking=True, timeout_s=2))
        if i < rounds - 1:
            time.sleep(max(0.0, started + seconds * (i + 1) / (rounds - 1) - time.monotonic()))
    deadline = time.monotonic() + STACKS_BUDGET_S
    for worker in workers if stacks else []:
        left = deadline - time.monotonic()
        worker.stack = stack_of(worker.pid, nonblocking=True, timeout_s=min(4, left)) if left > 0.5 else \
            f"Process {worker.pid}: not read (the doctor's {STACKS_BUDGET_S:g} s for stacks were spent)"
    job_pids = {trainer.pid, *procs}
    shm = sum(p.stat().st_size for p in torch_shm_files() if shm_file_creator(p.name) in job_pids)
    total = shutil.disk_usage("/dev/shm").total if Path("/dev/shm").is_dir() else None
    try:
        fds = trainer.num_fds()
    except psutil.Error:
        fds = None
    return Job(trainer=trainer.pid, command=_command(trainer), seconds=time.monotonic() - started,
               workers=[w for w in workers if w.state not in ("zombie", "dead")],
               gone=[w for w in workers if w.state in ("zombie", "dead")], helpers=helpers,
               trainer_stacks=trainer_stacks, trainer_cpu_s=sum(trainer.cpu_times()[:2]) - trainer_cpu,
               fds=fds, fd_limit=fd_soft_limit(trainer.pid), shm_bytes=shm, shm_total=total,
               cgroup=cgroup_memory(trainer.pid), cores=usable_cores()[0],
               stacks_readable=any(s.startswith("Process ") and "Thread" in s for s in trainer_stacks))


def frames(stack: str, limit: int = 4) -> str:
    """The innermost frames of a py-spy dump's main thread, one line: what the process waits in."""
    lines = [line.strip() for line in stack.splitlines() if line.startswith("    ")]
    return " ← ".join(lines[:limit]) if lines else stack.strip().splitlines()[0][:160] if stack.strip() else ""


def waits_for_data(stack: str) -> bool:
    """The trainer's stack is inside the DataLoader waiting for a batch."""
    return bool(re.search(r"_next_data|_get_data|_try_get_data", stack)) and \
        bool(re.search(r"\b(get|poll|wait|select|_poll|recv)\b \((?:queues|connection|threading|selectors)", stack))


def examine_running(pid: int, seconds: float = 6.0, only=None):
    """Read the job for `seconds`, then let each check judge it: a Findings report."""
    from scenarios.clinic.doctor.examine import guarded, ordered, select_checks
    from scenarios.clinic.doctor.findings import Findings

    started = time.monotonic()
    job = read_job(pid, seconds)
    checks = [c for c in select_checks(only) if hasattr(c, "running")]
    findings = Findings(ordered([f for c in checks for f in guarded(c, lambda check: check.running(job))]),
                        header=f"running job {job.trainer} ({job.command[:80]})")
    findings.probe_status, findings.status_label = summary(job), "job"
    findings.seconds = time.monotonic() - started
    findings.job = job
    return findings


def summary(job: Job) -> str:
    workers = ", ".join(f"{w.pid} {w.state} {w.cpu_share / job.seconds:.0%} CPU {w.threads} threads"
                        + (f" {w.uss_mb[-1]:,.0f} MB" if w.uss_mb else "") for w in job.workers[:6])
    stacks = "stacks read" if job.stacks_readable else \
        "stacks NOT read (py-spy cannot read this process: same user or root, kernel.yama.ptrace_scope=0, or sudo)"
    return (f"{len(job.workers)} worker(s) [{workers}]" + (f", {len(job.gone)} gone" if job.gone else "")
            + (f"; helpers: {', '.join(kind for _, kind in job.helpers)}" if job.helpers else "")
            + f"; sampled {job.seconds:.1f} s; {stacks}")
