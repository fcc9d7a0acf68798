"""Nothing the suite starts may outlive it, whatever happens to the test that started it.

Every process the suite starts inherits one environment variable from the pytest process that began
the session (the xdist workers, the runner's variants, the jobs the doctor examines, their
DataLoader workers and ranks). A process is the suite's by that mark alone, whichever session or
process group it moved to and whoever its parent became: a job started in a session of its own by
a pytest worker that then died (its test past pytest-timeout's limit) is still found.

`tied(command)` is the other half: a job started through it is ended by the kernel the moment the
process that started it dies (prctl's PR_SET_PDEATHSIG), without waiting for the suite's end.
"""
import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid

import psutil

SUITE_ENV = "CLINIC_SUITE_RUN"
_PR_SET_PDEATHSIG = 1


def mark_session(controller: bool) -> str:
    """The mark this session's processes carry: a new one in the process that runs the session (a suite
    started inside a test, as test_new_scenario.py starts one, must not end the outer suite's
    processes), inherited by its xdist workers."""
    if controller or SUITE_ENV not in os.environ:
        os.environ[SUITE_ENV] = uuid.uuid4().hex
    return os.environ[SUITE_ENV]


# Set in the started process itself, then exec'd into the command: a preexec_fn would run between fork
# and exec in a threaded pytest worker (execnet's threads), where a lock another thread held can hang it.
_TIE = ("import ctypes, os, sys; ctypes.CDLL(None).prctl(1, 9, 0, 0, 0); "  # PR_SET_PDEATHSIG, SIGKILL
        "os.execvp(sys.argv[1], sys.argv[1:])")


def tied(command: list[str]) -> list[str]:
    """`command`, ended by the kernel (SIGKILL) the moment the process that started it dies (Linux)."""
    return [sys.executable, "-c", _TIE, *command] if sys.platform.startswith("linux") else list(command)


def end_session(job: subprocess.Popen, grace_s: float = 15.0) -> None:
    """A job started in a session of its own (a torchrun launcher and its ranks): SIGTERM to the whole
    session, as a scheduler stops a job, then SIGKILL to what is left after `grace_s`."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(job.pid, sig)
        except ProcessLookupError:
            break
        try:
            job.wait(grace_s)
            break
        except subprocess.TimeoutExpired:
            continue
    job.wait()
    if job.stdout:
        job.stdout.close()


@contextlib.contextmanager
def hung_job(script, ready, settle_s: float, limit_s: float = 120.0):
    """A job that hangs by design (a torchrun launcher and its ranks, tests/jobs/), started tied in a session of
    its own; yielded once `ready(lines)` says so (or at `limit_s`) and `settle_s` later; ended with its session,
    and nothing of it left running."""
    job = subprocess.Popen(tied([sys.executable, str(script)]), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, start_new_session=True)
    try:
        deadline, lines = time.monotonic() + limit_s, []
        for line in job.stdout:
            lines.append(line)
            if ready(lines) or time.monotonic() > deadline:
                break
        time.sleep(settle_s)
        yield job
    finally:
        end_session(job)
    time.sleep(1.0)
    assert not [p for p in psutil.process_iter(["cmdline"]) if str(script) in " ".join(p.info["cmdline"] or [])]


def _ours_to_the_end(process: psutil.Process) -> bool:
    """This process's own multiprocessing helpers (its resource tracker, its fork server): they end
    when it does, after the session; ended before, the semaphores they keep would leak."""
    return process.ppid() == os.getpid() and "multiprocessing" in " ".join(process.cmdline())


def _marked(token: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter():
        if process.pid == os.getpid():
            continue
        try:  # a zombie's or another user's environment cannot be read: neither is a live leftover of ours
            if process.environ().get(SUITE_ENV) == token and process.status() != psutil.STATUS_ZOMBIE \
                    and not _ours_to_the_end(process):
                found.append(process)
        except psutil.Error:
            continue
    return found


def end_leftovers(token: str, grace_s: float = 10.0) -> list[str]:
    """Waits `grace_s` for the suite's processes to finish exiting (a resource tracker removing its
    semaphores, a worker noticing its parent is gone), then kills what is left: one line for each."""
    deadline = time.monotonic() + grace_s
    while (left := _marked(token)) and time.monotonic() < deadline:
        time.sleep(0.2)
    named = []
    for process in left:
        try:
            age_s = time.time() - process.create_time()
            named.append(f"pid {process.pid}, {age_s:.0f} s old: {' '.join(process.cmdline())[:160]}")
            process.kill()
        except psutil.Error:
            continue
    psutil.wait_procs(left, timeout=10)
    return named
