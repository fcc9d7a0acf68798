"""The suite's own guard: what a test starts is tied to its starter and found by its mark at the end."""
import os
import subprocess
import sys
import time

import psutil

from leftovers import SUITE_ENV, end_leftovers, tied


def test_a_process_that_moved_away_is_found_by_its_mark_killed_and_named():
    mark = f"test-{os.getpid()}-{time.monotonic_ns()}"  # a mark of its own: this suite's processes are left alone
    moved = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True,
                             env={**os.environ, SUITE_ENV: mark})
    try:
        named = end_leftovers(mark, grace_s=0.5)
        assert len(named) == 1 and named[0].startswith(f"pid {moved.pid},") and "time.sleep(60)" in named[0]
        moved.wait(10)  # reaped already by the finder's wait (a child of this process): gone either way
        assert not psutil.pid_exists(moved.pid)
    finally:
        if moved.poll() is None:
            moved.kill()
            moved.wait()


def test_a_tied_job_dies_with_the_process_that_started_it():
    # A starter that starts a tied sleeper and is then SIGKILLed: the kernel ends the sleeper at once.
    code = ("import subprocess, sys, time; from leftovers import tied; "
            "p = subprocess.Popen(tied([sys.executable, '-c', 'import time; time.sleep(60)'])); "
            "print(p.pid, flush=True); time.sleep(60)")
    starter = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    sleeper = int(starter.stdout.readline())
    deadline = time.monotonic() + 30
    # Forked, the child is the starter's copy; then the shim (its line says prctl), which ties it and becomes
    # the sleeper.  Only then is it tied.
    while not _is_the_sleeper(sleeper) and time.monotonic() < deadline:
        time.sleep(0.05)
    starter.kill()
    starter.wait()
    deadline = time.monotonic() + 10
    while psutil.pid_exists(sleeper) and psutil.Process(sleeper).status() != psutil.STATUS_ZOMBIE \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not psutil.pid_exists(sleeper) or psutil.Process(sleeper).status() == psutil.STATUS_ZOMBIE
    assert tied(["x"])[-1] == "x"


def _is_the_sleeper(pid: int) -> bool:
    line = " ".join(psutil.Process(pid).cmdline())
    return line.endswith("time.sleep(60)") and "prctl" not in line
