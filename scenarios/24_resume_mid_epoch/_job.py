"""A training job that dies mid-epoch and is restarted from its checkpoint (imported by the scripts).

run_job(train, kill_after_step) runs train(job) the way a cluster runs a training script:

- attempt 1 is a new Python process (multiprocessing's spawn: a fresh interpreter, as a job
  start is) in a process group of its own, which its DataLoader workers join when they are
  forked.  It trains and writes a checkpoint every SAVE_EVERY steps into a temporary folder.
  Once its training log reports step `kill_after_step` (each step waits for this process's
  go-ahead, so the kill lands right after that step), this process sends SIGKILL to that
  process group, as a scheduler does to a preempted job once its grace period is over, or
  as a lost node does: no exception, no `finally`, no DataLoader shutdown runs in it.  The
  steps it trained after its last checkpoint are lost with it.
- attempt 2 is another fresh process: train(job) again, which finds the checkpoint and
  resumes from it, and runs to the end.

The "model" is what it trained on: state["trained_on"], one list of sample indices per
step, saved and restored with the checkpoint as weights are.  Its final value is what the
job as a whole trained on, across the interruption.  The temporary folder is removed, and
every process of attempt 1 is gone (or a zombie for its subreaper) before run_job returns.

report(...) prints what happened and returns the figures the scripts print as `metric` lines.
"""
import os
import shutil
import signal
import tempfile
import time
from collections import Counter

import multiprocessing as mp

import psutil
import torch

from scenarios.host import cannot_run
from scenarios.instruments import remove_torch_shm_files

SAVE_EVERY = 5    # steps between checkpoints
STEP_S = 0.1      # what a training step takes (the forward and backward pass, here a sleep)
ATTEMPT_LIMIT_S = 30  # under the runner's limit, so that this message comes first


class Job:
    """What train(job) gets: its checkpoint, its training step, its log to the scheduler."""

    def __init__(self, folder, log):
        self.path = os.path.join(folder, "checkpoint.pt")
        self.log = log

    def resume(self):
        """The last checkpoint's state, or None on a first start."""
        if not os.path.exists(self.path):
            return None
        state = torch.load(self.path, weights_only=True)
        self.log.send(("resumed", len(state["trained_on"])))
        return state

    def train_step(self, state, indices):
        """The model learns from these samples (state["trained_on"] stands for its weights)."""
        time.sleep(STEP_S)
        state["trained_on"].append(indices.tolist())
        self.log.send(("step", len(state["trained_on"]), state["trained_on"][-1]))
        self.log.recv()  # the scheduler's go-ahead: the kill lands after a given step, however busy the machine

    def save(self, state):
        """Write the checkpoint whole or not at all: a job can die while writing it."""
        torch.save(state, self.path + ".part")
        os.replace(self.path + ".part", self.path)
        self.log.send(("saved", len(state["trained_on"])))


def _attempt(train, folder, log):
    os.setpgrp()  # this process and the DataLoader workers it forks: one group to kill
    train(Job(folder, log))
    log.send(("finished", None))


def _run_attempt(train, folder, kill_after_step=None):
    """One attempt in a fresh process; its log, how it ended, and how many processes were killed."""
    context = mp.get_context("spawn")
    receive, send = context.Pipe()
    attempt = context.Process(target=_attempt, args=(train, folder, send))
    attempt.start()
    send.close()  # ours: the pipe reads as closed once the attempt is gone
    log, deadline, group = [], time.monotonic() + ATTEMPT_LIMIT_S, []
    try:
        while True:
            if not receive.poll(max(0.0, deadline - time.monotonic())):
                raise TimeoutError(f"an attempt of the job did not finish in {ATTEMPT_LIMIT_S} s")
            try:
                log.append(receive.recv())
            except EOFError:
                break
            if kill_after_step and log[-1][0] == "step" and log[-1][1] >= kill_after_step:
                group = _kill_group(attempt)
                break
            if log[-1][0] == "step":
                receive.send("go on")
    finally:
        attempt.join(5)  # an attempt that finished exits by itself
        if attempt.is_alive():  # only on a failure: end it, workers and all
            group = _kill_group(attempt)
            attempt.join(10)
        receive.close()
        _wait_gone(group)
        # A worker killed while handing a batch over can leave its shared-memory file behind.
        left = remove_torch_shm_files([attempt.pid, *(p.pid for p in group)]) if group else []
        if left:
            print(f"removed {len(left)} /dev/shm file(s) the killed processes left: {', '.join(left)}")
    return log, attempt.exitcode, len(group)


def _kill_group(attempt):
    """SIGKILL to the attempt's process group; returns the processes it had below it."""
    try:
        below = psutil.Process(attempt.pid).children(recursive=True)
    except psutil.Error:
        below = []
    try:
        os.killpg(attempt.pid, signal.SIGKILL)
    except ProcessLookupError:  # it died before making its group
        attempt.kill()
    return below


def _wait_gone(processes, limit_s=10):
    """Until every process is gone or a zombie (its new parent, a subreaper, reaps it)."""
    deadline = time.monotonic() + limit_s
    for process in processes:
        while time.monotonic() < deadline:
            try:
                if process.status() == psutil.STATUS_ZOMBIE:
                    break
            except psutil.NoSuchProcess:
                break
            time.sleep(0.02)


def run_job(train, kill_after_step):
    """Attempt 1, killed after step `kill_after_step`; attempt 2, resumed from the checkpoint.
    Returns what the job's model trained on in the end and both attempts' logs."""
    if not hasattr(os, "killpg") or "spawn" not in mp.get_all_start_methods():
        cannot_run("the job's interruption needs POSIX process groups (os.killpg): run it on Linux")
    folder = tempfile.mkdtemp(prefix="checkpoints-")
    try:
        first, first_exit, killed = _run_attempt(train, folder, kill_after_step)
        if first_exit != -signal.SIGKILL:
            raise RuntimeError(f"attempt 1 ended with exit code {first_exit} before it was killed")
        second, second_exit, _ = _run_attempt(train, folder)
        if second_exit != 0:
            raise RuntimeError(f"attempt 2 (the resumed job) failed with exit code {second_exit}")
        final = torch.load(os.path.join(folder, "checkpoint.pt"), weights_only=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"trained_on": final["trained_on"], "first": first, "second": second,
            "killed_processes": killed + 1}


def _steps(log):
    return {entry[1]: entry[2] for entry in log if entry[0] == "step"}


def report(job, samples, steps_per_epoch):
    """Print the interruption and each epoch's per-sample counts; return the figures."""
    first, second = _steps(job["first"]), _steps(job["second"])
    saved = max(entry[1] for entry in job["first"] if entry[0] == "saved")
    resumed = next(entry[1] for entry in job["second"] if entry[0] == "resumed")
    epoch, step = divmod(resumed, steps_per_epoch)
    print(f"attempt 1: trained steps 1-{max(first)}, checkpoint at step {saved}, then SIGKILL "
          f"to its {job['killed_processes']} processes (the training process and its DataLoader workers)")
    print(f"attempt 2: resumed from the checkpoint at step {resumed} (epoch {epoch}, step {step} of "
          f"{steps_per_epoch}) and trained steps {min(second)}-{max(second)}")
    lost = [s for s in sorted(first) if s > resumed]
    replayed = sum(first[s] == second.get(s) for s in lost)
    print(f"the {len(lost)} steps lost with attempt 1 ({lost[0]}-{lost[-1]}): attempt 1 trained on "
          f"{first[lost[0]][:4]}..., attempt 2 on {second[lost[0]][:4]}...; "
          f"{replayed} of {len(lost)} steps had the same batch")
    figures = {"resumed_at_step": resumed, "resumed_in_epoch": epoch, "lost_steps": len(lost),
               "lost_steps_replayed_differently": len(lost) - replayed, "samples_seen_twice": 0,
               "samples_never_seen": 0, "epochs_exactly_once": 0,
               "steps_trained": len(job["trained_on"])}
    trained = job["trained_on"]
    for e in range(len(trained) // steps_per_epoch):
        counts = Counter(i for batch in trained[e * steps_per_epoch:(e + 1) * steps_per_epoch] for i in batch)
        per_sample = [counts.get(i, 0) for i in range(samples)]
        tally = Counter(per_sample)
        print(f"epoch {e}: {tally[1]} of {samples} samples trained on once, "
              f"{sum(n for c, n in tally.items() if c > 1)} twice or more, {tally[0]} never")
        print(f"epoch {e} counts per sample: {' '.join(map(str, per_sample))}")
        figures["samples_seen_twice"] += sum(n for c, n in tally.items() if c > 1)
        figures["samples_never_seen"] += tally[0]
        figures["epochs_exactly_once"] += tally[1] == samples
    return figures
