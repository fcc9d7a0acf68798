"""The job the grader kills itself (20): the attempt's training job started as a scheduler starts one,
paused as a slow step pauses it, then SIGKILLed by its main process's pid, and its DataLoader workers
counted from /proc afterwards.  Whatever the attempt's own script does to play the scheduler (its
Popen replaced, its kill sent to a process group) is not in this run: the grade rests on what the
kernel left after the grader's kill.

Declared in the exercise's `[exercise]` table:

    kill_job = { argv = ["--train", "fork"], ready = "^step 1:", kill_at = "^step 3:", pause_s = 2, watch_s = 2 }

argv: the arguments that make the attempt run as the job itself; ready: a line of the job's output
after which it is paused for pause_s (a live job: no worker may end meanwhile); kill_at: the line
after which its main process gets SIGKILL; watch_s: how long after that the workers may live.
"""
from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

from scenarios.clinic import REPO_ROOT
from scenarios.instruments import helper_kind


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _workers(job: subprocess.Popen) -> list[psutil.Process]:
    try:
        return [p for p in psutil.Process(job.pid).children(recursive=True) if helper_kind(p.pid) is None]
    except psutil.Error:
        return []


def _until(lines: queue.Queue, pattern: str, deadline: float) -> bool:
    """Read the job's output until a line matches; False if it ended or the deadline passed first."""
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(0.05, deadline - time.monotonic()))
        except queue.Empty:
            return False
        if line is None:
            return False
        if re.search(pattern, line):
            return True
    return False


def _paused(job: subprocess.Popen, seconds: float) -> tuple[int, int]:
    """(workers before, workers alive) across a pause of the main process: a slow step."""
    workers = _workers(job)
    os.kill(job.pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
        return len(workers), sum(map(_alive, workers))
    finally:
        os.kill(job.pid, signal.SIGCONT)


def _killed(job: subprocess.Popen, watch_s: float) -> tuple[int, int]:
    """(workers at the kill, workers alive watch_s after SIGKILL to the main process's pid)."""
    workers = _workers(job)
    job.send_signal(signal.SIGKILL)
    job.wait()
    deadline = time.monotonic() + watch_s
    while time.monotonic() < deadline and any(map(_alive, workers)):
        time.sleep(0.05)
    return len(workers), sum(map(_alive, workers))


def run(script: Path, scenario_folder: Path, spec: dict, limit_s: float) -> dict:
    """Start, pause, kill and watch the job; every process of it reaped before returning.  `limit_s`:
    the fixed variant's limit, within which fixed.py runs this job and more, so a job that has not
    reached its kill line by then never will: waiting longer only delays the grade."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(scenario_folder), str(REPO_ROOT),
                                                                    os.environ.get("PYTHONPATH")])))
    job = subprocess.Popen([sys.executable, str(script), *spec["argv"]], cwd=scenario_folder, env=env, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: ([lines.put(line) for line in job.stdout], lines.put(None)), daemon=True).start()
    seen: dict = {"killed": False}
    try:
        deadline = time.monotonic() + limit_s
        if not _until(lines, spec["ready"], deadline):
            return seen
        seen["paused_workers"], seen["alive_after_pause"] = _paused(job, spec.get("pause_s", 2))
        if seen["alive_after_pause"] < seen["paused_workers"]:  # said already: no kill to judge
            return seen
        if not _until(lines, spec["kill_at"], deadline):
            return seen
        seen["workers"], seen["left"] = _killed(job, spec.get("watch_s", 2))
        seen["killed"] = True
        return seen
    finally:
        _reap(job)


def _reap(job: subprocess.Popen) -> None:
    """The job's session, all of it (its workers left alive included), by its group."""
    try:
        os.killpg(job.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    job.kill()
    job.wait()
    for proc in psutil.process_iter():
        try:
            if os.getsid(proc.pid) == job.pid:
                proc.kill()
        except (OSError, psutil.Error):
            pass


def problems(spec: dict, seen: dict) -> list[str]:
    """What the grader's kill showed, one sentence each."""
    if "paused_workers" not in seen:
        return [f"the attempt's training job (run as `{' '.join(spec['argv'])}`) never printed a line like "
                f"/{spec['ready']}/: the grader could not kill it as a scheduler would"]
    said = []
    ended = seen["paused_workers"] - seen["alive_after_pause"]
    if ended:
        said.append(f"{ended} of the job's {seen['paused_workers']} DataLoader workers ended while the job was alive, "
                    f"paused {spec.get('pause_s', 2):g} s by the grader as a slow step pauses it: a worker may "
                    "only end with its job")
    if ended:
        return said
    if not seen["killed"]:
        said.append(f"the job never printed a line like /{spec['kill_at']}/ after its pause")
    elif seen["left"]:
        said.append(f"{seen['left']} of the job's {seen['workers']} DataLoader workers were still alive "
                    f"{spec.get('watch_s', 2):g} s after the grader sent SIGKILL to the job's main process (counted "
                    "from /proc; whatever the script's own watch reports): nothing ties them to the job")
    return said
