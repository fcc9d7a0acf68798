"""Not for people to run: the scheduler around a training job, for this scenario's scripts.

A script's main() calls preempt_job(train).  In the script's own process that starts the same
script again as the training job (`--train CHECKPOINT_PATH`), PREEMPTIONS times, each in a
session and process group of its own, as Slurm starts a job step's tasks.  Once a job reports
step SIGNAL_AFTER_STEP, the whole group gets SIGTERM (os.killpg: the job's main process and
every DataLoader worker it forked), as `scancel`, a preemption or a time limit's warning send
it to every process of the step (a process that left the group gets it by its pid: Slurm finds
a step's processes by their cgroup, not by their group).  Then it watches, for up to GRACE_S, the job's processes and
its checkpoint, as the scheduler's grace period runs: whether the workers were still alive when
a checkpoint written after the signal appeared, how the job ended.  Whatever is left after the
grace gets SIGKILL, as Slurm's KillWait ends it.  In the job's process, preempt_job just calls
train(checkpoint_path).
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import psutil
import torch

PREEMPTIONS = 3
SIGNAL_AFTER_STEP = 3   # the job is mid-epoch, its workers busy: the signal lands in step 4
GRACE_S = 10            # Slurm's KillWait is 30 s by default; a job that saves at its next step needs far less
STARTUP_LIMIT_S = 60
POLL_S = 0.005
EXITED = re.compile(r"DataLoader worker \(pid\(s\) [\d, ]+\) exited unexpectedly")


def preempt_job(train, sent: signal.Signals = signal.SIGTERM, times: int = PREEMPTIONS) -> dict:
    """Run `train(checkpoint_path)` as a job `times` times, signal each one's process group,
    and return the figures of what the jobs did after the signal."""
    if "--train" in sys.argv:
        train(sys.argv[sys.argv.index("--train") + 1])
        return {}
    runs = [_preempt_once(train_number, sent) for train_number in range(1, times + 1)]
    return {
        "jobs_preempted": len(runs),
        "checkpoints_written": sum(r["checkpoint"] for r in runs),
        "checkpoints_at_step_in_progress": sum(r["checkpoint"] and r["step"] == SIGNAL_AFTER_STEP + 1 for r in runs),
        "jobs_exited_0": sum(r["status"] == 0 for r in runs),
        "workers_gone_before_checkpoint": sum(r["workers_gone"] for r in runs),
        "workers_signalled": sum(r["workers"] for r in runs),
        "jobs_past_grace": sum(r["status"] is None for r in runs),
        "jobs_saying_killed_by_sigterm": sum(r["said_sigterm"] for r in runs),
        "jobs_saying_exited_unexpectedly": sum(r["said_exited"] for r in runs),
        "seconds_to_exit_max": round(max(r["seconds"] for r in runs), 2),
    }


def _preempt_once(number: int, sent: signal.Signals) -> dict:
    folder = tempfile.mkdtemp(prefix="preempted_job_")
    path = os.path.join(folder, "checkpoint.pt")
    job = subprocess.Popen([sys.executable, sys.argv[0], "--train", path], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, bufsize=1, start_new_session=True)
    said: list[str] = []
    try:
        workers = _train_until_signal_step(job, said)
        signalled_ns = time.time_ns()
        os.killpg(job.pid, sent)  # the scheduler's signal, to every process of the job's group
        for worker in workers:  # and, as Slurm's cgroup tracking does, to any that left the group
            _signal_outside_group(worker, job.pid, sent)
        run = _watch(job, path, workers, signalled_ns, said)
    finally:  # on every way out the job's session goes too: nothing may outlive this script
        _kill_session(job)
        shutil.rmtree(folder, ignore_errors=True)
    run["workers"] = len(workers)
    run["said_sigterm"] = any("is killed by signal: Terminated" in line for line in said)
    run["said_exited"] = any(EXITED.search(line) for line in said)
    ended = "ran past its grace and was killed" if run["status"] is None else f"exited {run['status']}"
    saved = (f"wrote its checkpoint at step {run['step']} ({run['samples']} samples, each once)"
             if run["checkpoint"] else "wrote no checkpoint")
    print(f"preemption {number}: {sent.name} to the job's process group after step {SIGNAL_AFTER_STEP}; "
          f"{run['workers_gone']} of its {len(workers)} DataLoader workers were gone before any checkpoint; "
          f"the job {saved} and {ended} {run['seconds']:.2f} s after the signal", flush=True)
    return run


def _train_until_signal_step(job: subprocess.Popen, said: list[str]) -> list[psutil.Process]:
    """Pass the job's output on until its step SIGNAL_AFTER_STEP; then its workers, read while it lives."""
    deadline = time.monotonic() + STARTUP_LIMIT_S
    for line in job.stdout:
        _pass_on([line], said)
        if line.startswith(f"step {SIGNAL_AFTER_STEP}:"):
            return psutil.Process(job.pid).children(recursive=True)
        if time.monotonic() > deadline:
            break
    raise RuntimeError(f"the training job ended or stalled before step {SIGNAL_AFTER_STEP}")


def _watch(job: subprocess.Popen, path: str, workers: list[psutil.Process], signalled_ns: int,
           said: list[str]) -> dict:
    """Until the job ends or its grace is over: the workers gone before a checkpoint written after the
    signal appeared (the job's own periodic checkpoints, older than the signal, do not count)."""
    output = threading.Thread(target=_pass_on, args=(job.stdout, said), daemon=True)
    output.start()
    gone, checkpoint_seen = 0, False
    while time.time_ns() - signalled_ns < GRACE_S * 1e9:
        if not checkpoint_seen:
            checkpoint_seen = _written_since(path, signalled_ns)
            gone = gone if checkpoint_seen else sum(not _alive(w) for w in workers)
        if job.poll() is not None:
            break
        time.sleep(POLL_S)
    seconds = (time.time_ns() - signalled_ns) / 1e9
    output.join(timeout=2)
    run = {"status": job.poll(), "seconds": seconds, "workers_gone": gone, "checkpoint": False, "step": None,
           "samples": 0}
    if _written_since(path, signalled_ns):
        steps = torch.load(path, weights_only=True)["trained_on"]  # one list of sample indices per step
        samples = [index for step in steps for index in step]
        # the model's state as of a finished step: every sample up to it once, in the loader's order
        run.update(checkpoint=samples == list(range(len(samples))), step=len(steps) - 1, samples=len(samples))
    return run


def _written_since(path: str, since_ns: int) -> bool:
    try:
        return os.stat(path).st_mtime_ns >= since_ns
    except OSError:
        return False


def _signal_outside_group(proc: psutil.Process, group: int, sent: signal.Signals) -> None:
    try:
        if os.getpgid(proc.pid) != group:
            proc.send_signal(sent)
    except (OSError, psutil.Error):
        pass


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _pass_on(lines, said: list[str]) -> None:
    for line in lines:
        said.append(line)
        print(f"  | {line}", end="", flush=True)


def _kill_session(job: subprocess.Popen) -> None:
    try:
        os.killpg(job.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    job.wait()
