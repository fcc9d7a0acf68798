"""Not for people to run: the cluster around a training job, for this scenario's scripts.

A script's main() calls cancel_job(train, start_method).  In the script's own
process that starts the same script again as the training job (`--train
METHOD`), lets it train KILL_AT_STEP steps, kills it (SIGKILL, the way the
kernel's OOM killer or a scheduler signalling the job's pid does), then watches
for up to WATCH_S seconds which of the job's processes are still alive and how
much memory they hold alone (USS, from /proc).  Only after counting does it end
what is left, by pid, so that the runner's own clean-up has nothing to hide.
In the job's process, cancel_job just calls train(start_method).
"""
from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

import psutil

from scenarios.instruments import SHM_DIR, helper_kind, process_memory_mb

WATCH_S = 6.5      # past MP_STATUS_CHECK_INTERVAL (5 s): every worker has checked its parent by then
TICK_S = 0.5
KILL_AT_STEP = 3   # mid-epoch, the workers busy
STARTUP_LIMIT_S = 60


def cancel_job(train, start_method: str = "fork", label: str | None = None,
               kill_with: signal.Signals = signal.SIGKILL) -> int:
    """Run `train(start_method)` as a job of its own, kill it, count what outlives it.
    Returns how many of the job's processes were still alive at the end of the watch."""
    if "--train" in sys.argv:
        return train(sys.argv[sys.argv.index("--train") + 1])
    job = subprocess.Popen([sys.executable, sys.argv[0], "--train", start_method],
                           stdout=subprocess.PIPE, text=True, bufsize=1)
    processes, left, semaphores = [], [], set()
    try:
        processes = _train_until_kill_step(job)
        semaphores = _semaphores([job.pid] + [p.pid for p in processes])
        job.send_signal(kill_with)
        job.wait()
        print(f"cancelled: {kill_with.name} to the training job (pid {job.pid}), "
              f"which had started {len(processes)} processes", flush=True)
        left = _watch(processes, label or start_method)
    finally:  # on every way out, the job's processes go too: none may outlive this script
        job.kill()
        _reap(processes)
    still = sum(1 for p in processes if _alive(p))
    stale = sum(1 for name in semaphores if (SHM_DIR / name).exists())
    print(f"reaped the {len(left)} left behind after counting them; alive now: {still}; "
          f"the job's semaphores left in /dev/shm: {stale} of {len(semaphores)}", flush=True)
    print(f"metric {label or start_method}_alive_after_reap={still}")
    print(f"metric {label or start_method}_semaphores_left={stale}")
    return len(left)


def _train_until_kill_step(job: subprocess.Popen) -> list[psutil.Process]:
    """Pass the job's output on until step KILL_AT_STEP; then the job's descendants, read
    while it lives (once it is dead, nothing links them to it any more)."""
    deadline = time.monotonic() + STARTUP_LIMIT_S
    for line in job.stdout:
        print(line, end="", flush=True)
        if line.startswith(f"step {KILL_AT_STEP}:"):
            processes = psutil.Process(job.pid).children(recursive=True)
            threading.Thread(target=_pass_on, args=(job.stdout,), daemon=True).start()
            return processes
        if time.monotonic() > deadline:
            break
    raise RuntimeError(f"the training job ended or stalled before step {KILL_AT_STEP}")


def _semaphores(pids: list[int]) -> set[str]:
    """Named semaphores the job's processes map (forkserver and spawn name theirs in /dev/shm;
    the resource tracker removes them once every holder is gone, unless it is killed first).
    Told by inode: the creator's mapping is of glibc's temporary file, under another name."""
    inodes = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/maps") as maps:
                inodes.update(int(line.split()[4]) for line in maps if "/dev/shm/sem." in line)
        except (OSError, IndexError, ValueError):
            pass
    names = set()
    for path in SHM_DIR.glob("sem.mp-*"):
        try:
            if path.stat().st_ino in inodes:
                names.add(path.name)
        except OSError:
            pass
    return names


def _pass_on(stream) -> None:
    for line in stream:  # ends when the last holder of the job's stdout is gone
        print(line, end="", flush=True)


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _uss_mb(proc: psutil.Process) -> float:
    return (process_memory_mb(proc) or (0.0, 0.0))[0]


def _watch(processes: list[psutil.Process], label: str) -> list[psutil.Process]:
    """Every TICK_S: how many of the job's processes live, and their USS; stops early once
    none does (a pid that is gone does not come back)."""
    killed_at = time.monotonic()
    while True:
        waited = time.monotonic() - killed_at
        alive = [p for p in processes if _alive(p)]
        uss = sum(_uss_mb(p) for p in alive)
        print(f"{label}: after {waited:3.1f} s: {len(alive)} of {len(processes)} alive, "
              f"{uss:.1f} MB USS", flush=True)
        if waited >= WATCH_S or not alive:
            break
        time.sleep(TICK_S)
    for proc in alive:
        try:
            kind = helper_kind(proc.pid) or "DataLoader worker"
            print(f"  left behind: pid {proc.pid} ({kind}), parent now pid {proc.ppid()}, "
                  f"thread name {proc.name()!r}, {_uss_mb(proc):.1f} MB USS")
        except psutil.Error:
            pass
    workers = sum(1 for p in alive if helper_kind(p.pid) is None)
    print(f"metric {label}_left_alive={len(alive)}")
    print(f"metric {label}_left_workers={workers}")
    print(f"metric {label}_left_uss_mb={uss:.1f}")
    print(f"metric {label}_watched_s={waited:.1f}")
    return alive


def _reap(processes: list[psutil.Process]) -> None:
    """SIGKILL the workers and the fork server by pid (psutil refuses a pid reused since it was
    read); the resource tracker, which ignores SIGTERM, then sees end-of-file and leaves by
    itself after removing the job's semaphores (killing it would leave them in /dev/shm)."""
    trackers = [p for p in processes if helper_kind(p.pid) == "multiprocessing.resource_tracker"]
    for proc in processes:
        if proc not in trackers:
            _kill(proc)
    _wait_gone(processes, timeout_s=15)
    for proc in processes:  # a tracker that did not leave in 15 s
        _kill(proc)
    _wait_gone(processes, timeout_s=5)


def _kill(proc: psutil.Process) -> None:
    try:
        proc.kill()
    except psutil.Error:
        pass


def _wait_gone(processes: list[psutil.Process], timeout_s: float) -> None:
    """Until none is alive; a zombie counts as gone (its parent, now init or the nearest
    subreaper, reaps it, not this script)."""
    deadline = time.monotonic() + timeout_s
    while any(_alive(p) for p in processes) and time.monotonic() < deadline:
        time.sleep(0.05)
