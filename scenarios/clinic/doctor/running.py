"""A training job running now, examined without stopping, slowing or changing it.

    python -m scenarios doctor --pid PID [--seconds N] [--json]

Reads /proc (through psutil) and the stacks (py-spy dump --nonblocking: the process is not
paused); sends no signal and writes nothing to the job.  A worker's PID given by mistake leads
to its training process.  What it reads is a job.Job; examine.examine_running hands it to the
checks' `running(job)` hooks.
"""
from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import psutil

from scenarios.clinic.doctor.job import FORK_SERVER, SPAWNED, Job, Worker
from scenarios.clinic.doctor.processes import command_of, exit_of, maps_of, runs_worker_loop, wchan_of
from scenarios.signal_masks import caught_signals
from scenarios.host import usable_cores
from scenarios.memory_cgroup import memory_cgroup_of
from scenarios.instruments import helper_kind, process_memory_mb, shm_file_creator, torch_shm_files
from scenarios.threads import thread_cpu_s


def trainer_of(pid: int) -> int:
    """The training process: `pid` itself, or, for a worker or a fork server, the process above."""
    proc = psutil.Process(pid)
    for _ in range(3):
        parent = proc.parent()
        if parent is None:
            return proc.pid
        command, above = command_of(proc), command_of(parent)
        is_worker = SPAWNED in command or FORK_SERVER in command or FORK_SERVER in above or \
            (command and command == above and "torch" in maps_of(proc.pid))
        if not is_worker:
            return proc.pid
        proc = parent
    return proc.pid


def _runs_workers(proc: psutil.Process) -> bool:
    """A process whose children are DataLoader workers (running the worker loop; spawned ones also
    say so on their command line before they reach it) or a fork server."""
    try:
        children = proc.children()
    except psutil.Error:
        return False
    return any(runs_worker_loop(c.pid) or SPAWNED in command_of(c) or helper_kind(c.pid) == FORK_SERVER
               for c in children)


def trainers_below(pid: int, most: int = 4) -> list[tuple[int, str]]:
    """(pid, why) of each process that runs DataLoaders, from any PID of the job's tree: a worker or a
    fork server leads up to its trainer; a launcher (bash run.sh, torchrun, accelerate launch, srun)
    down to the processes below it that have workers; else the process itself."""
    top = trainer_of(pid)
    proc = psutil.Process(top)
    if _runs_workers(proc):
        return [(top, "given" if top == pid else f"the training process above {pid}")]
    try:
        below = [p for p in proc.children(recursive=True) if _runs_workers(p)]
    except psutil.Error:
        below = []
    if below:
        launcher = (command_of(proc).split() or ["?"])[0].rsplit("/", 1)[-1]
        return [(p.pid, f"runs DataLoader workers below {launcher} {top}") for p in below[:most]]
    return [(top, "given; no DataLoader workers found in its tree" if top == pid else
             f"the training process above {pid}")]


def torch_descriptors(pid: int) -> tuple[int | None, int]:
    """(open descriptors, of them torch's shared-memory ones: each a tensor storage a kept or
    in-flight batch holds, /dev/shm/torch_… unlinked)."""
    try:
        names = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    except OSError:
        return None, 0
    return len(names), sum(1 for n in names if "/torch_" in n)


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
        elif "python" in command_of(child) or "torch" in maps_of(child.pid) or runs_worker_loop(child.pid):
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


SETTLED_AGE_S = 10.0  # a worker this old is past its start-up even where torch does not name it
FIRST_BATCHES_S = 1.5  # and once named, its first batches: lazy imports, pages first touched


def settled(proc: psutil.Process) -> bool:
    """A worker past its start-up: in its worker loop (runs_worker_loop), which a spawned worker
    reaches once it has imported its modules and unpickled its dataset.  Before, it imports,
    allocates and has sent no batch, so its trainer waits for data: an epoch's start, not a
    rule's evidence."""
    age = time.time() - proc.create_time()
    return age >= SETTLED_AGE_S or age >= FIRST_BATCHES_S and runs_worker_loop(proc.pid)


def _sample(workers: list, procs: dict) -> None:
    for worker in workers:
        if worker.ended:
            continue
        proc = procs[worker.pid]
        try:
            worker.state = proc.status()
            if worker.state == psutil.STATUS_ZOMBIE:
                raise psutil.NoSuchProcess(worker.pid)
            worker.settled = worker.settled if worker.sampled_at else settled(proc)
            times = proc.cpu_times()
            memory = process_memory_mb(proc)
            worker.threads, threads = proc.num_threads(), thread_cpu_s(worker.pid)
        except psutil.Error:
            worker.state, worker.ended = "gone", exit_of(worker.pid) or "reaped"
            continue
        worker.cpu_s.append(times.user + times.system)
        worker.states.append(worker.state)
        if memory:
            worker.uss_mb.append(memory[0])
            worker.rss_mb.append(memory[1])
        worker.thread_cpu_s.append(threads)
        worker.sampled_at.append(time.monotonic())


def _join_new(trainer: psutil.Process, workers: list, procs: dict) -> list:
    """Workers that started since the last look (a new epoch's, a validation loader's) join the
    sample; returns the helpers (fork server, resource tracker) seen now."""
    try:
        found, helpers = workers_of(trainer)
    except psutil.Error:
        return []
    for proc in found:
        if proc.pid not in procs:
            procs[proc.pid] = proc
            workers.append(Worker(proc.pid, "?", 0))
    return helpers


def _sorted_out(workers: list, rounds: int) -> dict:
    """The workers by what rules may judge: those sampled, past their start-up, over the whole
    window; those a signal killed (a zombie whose status says so); those that ended by themselves
    or were reaped (a non-persistent loader's at its epoch's end), and those that started within
    the window or were still starting at its first sample."""
    for worker in workers:  # one last look: the stacks took seconds
        worker.ended = worker.ended or exit_of(worker.pid)
    live = [w for w in workers if not w.ended]
    whole = [w for w in live if len(w.sampled_at) == rounds and w.settled]
    return dict(workers=whole, started=[w for w in live if w not in whole],
                gone=[w for w in workers if w.ended.startswith("killed")],
                ended=[w for w in workers if w.ended and not w.ended.startswith("killed")])


STACKS_BUDGET_S = 7.0   # py-spy reads after the window: with the default 6 s window, an answer within 15 s


def _size(path: Path) -> int:
    """A /dev/shm file's size, 0 once gone: a running job's loop frees a batch's file at any moment."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def read_job(pid: int, seconds: float = 6.0, stacks: bool = True, trainer_pid: int | None = None) -> Job:
    """Sample the job for `seconds`: workers' CPU and private memory, the trainer's stack and
    descriptors a few times, workers that start meanwhile joining; then the live workers' stacks,
    as many as STACKS_BUDGET_S allows (a loaded machine slows py-spy).  `trainer_pid`: the
    process trainers_below chose."""
    from scenarios.clinic.run.supervise import stack_of

    trainer = psutil.Process(trainer_pid or trainer_of(pid))
    if trainer.status() == psutil.STATUS_ZOMBIE:  # ended, not yet reaped by its parent
        raise psutil.NoSuchProcess(pid)
    workers, procs, helpers = [], {}, []
    trainer_stacks, fd_samples, started = [], [], time.monotonic()
    trainer_cpu = sum(trainer.cpu_times()[:2])
    rounds = 3
    for i in range(rounds):
        helpers = _join_new(trainer, workers, procs) or helpers
        _sample(workers, procs)
        fd_samples.append((time.monotonic() - started, *torch_descriptors(trainer.pid)))
        if stacks:
            trainer_stacks.append(stack_of(trainer.pid, nonblocking=True, timeout_s=2))
        if i < rounds - 1:
            time.sleep(max(0.0, started + seconds * (i + 1) / (rounds - 1) - time.monotonic()))
    _read_stacks([w for w in workers if not w.ended] if stacks else [])
    for worker in workers:
        worker.catches_sigterm = None if worker.ended else signal.SIGTERM in caught_signals(worker.pid)
    job_pids = {trainer.pid, *procs}
    shm = sum(_size(p) for p in torch_shm_files() if shm_file_creator(p.name) in job_pids)
    total = shutil.disk_usage("/dev/shm").total if Path("/dev/shm").is_dir() else None
    return Job(trainer=trainer.pid, command=command_of(trainer), seconds=time.monotonic() - started,
               helpers=helpers, trainer_stacks=trainer_stacks, trainer_cpu_s=sum(trainer.cpu_times()[:2]) - trainer_cpu,
               fds=fd_samples[-1][1], fd_limit=fd_soft_limit(trainer.pid), fd_samples=fd_samples, shm_bytes=shm,
               shm_total=total, cgroup=memory_cgroup_of(trainer.pid), cores=usable_cores()[0],
               stacks_readable=any(s.startswith("Process ") and "Thread" in s for s in trainer_stacks),
               trainer_catches_sigterm=signal.SIGTERM in caught_signals(trainer.pid),
               **_sorted_out(workers, rounds))


def _read_stacks(workers: list) -> None:
    from scenarios.clinic.run.supervise import stack_of

    deadline = time.monotonic() + STACKS_BUDGET_S
    for worker in workers:
        left = deadline - time.monotonic()
        worker.stack = stack_of(worker.pid, nonblocking=True, timeout_s=min(4, left)) if left > 0.5 else \
            f"Process {worker.pid}: not read (the doctor's {STACKS_BUDGET_S:g} s for stacks were spent)"
        worker.sleeps_in = wchan_of(worker.pid)


def summary(job: Job) -> str:
    workers = ", ".join(f"{w.pid} {w.state} {w.cpu_share / job.seconds:.0%} CPU {w.threads} threads"
                        + (f" {w.uss_mb[-1]:,.0f} MB" if w.uss_mb else "") for w in job.workers[:6])
    stacks = "stacks read" if job.stacks_readable else \
        "stacks NOT read (py-spy cannot read this process: same user or root, kernel.yama.ptrace_scope=0, or sudo)"
    passing = [f"{len(job.started)} started", f"{len(job.ended)} ended"] if job.started or job.ended else []
    return (f"{len(job.workers)} worker(s) [{workers}]" + (f", {len(job.gone)} killed" if job.gone else "")
            + (f" ({' and '.join(passing)} within the window: an epoch's start or end, judged by no rule)"
               if passing else "")
            + (f"; helpers: {', '.join(kind for _, kind in job.helpers)}" if job.helpers else "")
            + f"; sampled {job.seconds:.1f} s; {stacks}")
