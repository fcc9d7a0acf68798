"""fixes/worker_lifetime.py: a worker tied by DieWithTrainer dies with the process that built it.

Real processes throughout: a "trainer" subprocess builds DieWithTrainer, starts a child the
way a DataLoader starts a worker (fork or forkserver), and is SIGKILLed; the child must be gone
within seconds.  The same child without the tie outlives the trainer, so the test can fail.
What a test counts, it counts before it reaps.
"""
import ctypes
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import threading
import time

import psutil
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from conftest import REPO_ROOT
from fixes import worker_lifetime
from fixes.worker_lifetime import DieWithTrainer

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl and /proc are Linux's")

# The trainer: builds the tie, starts one child with the given start method, prints its pid,
# and waits to be killed.  The child calls the tie (or not), then sleeps: it has no reason of
# its own to end, as a worker stuck in its exit has none.
TRAINER = textwrap.dedent("""
    import multiprocessing, sys, time
    from fixes.worker_lifetime import DieWithTrainer

    def child(tie):
        if tie is not None:
            tie(0)
        print(multiprocessing.current_process().pid, flush=True)  # tied (or not) by now
        time.sleep(60)

    if __name__ == "__main__":
        method, tied = sys.argv[1], sys.argv[2] == "tied"
        ctx = multiprocessing.get_context(method)
        process = ctx.Process(target=child, args=(DieWithTrainer() if tied else None,), daemon=True)
        process.start()
        time.sleep(60)
""")


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _kill_trainer_and_watch_child(tmp_path, method: str, tied: bool, watch_s: float) -> bool:
    """Is the trainer's child still alive `watch_s` after the trainer was SIGKILLed?"""
    script = tmp_path / "trainer.py"
    script.write_text(TRAINER)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    trainer = subprocess.Popen([sys.executable, str(script), method, "tied" if tied else "free"],
                               stdout=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    child = None
    try:
        child = psutil.Process(int(trainer.stdout.readline()))
        trainer.kill()
        trainer.wait()
        deadline = time.monotonic() + watch_s
        while _alive(child.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        return _alive(child.pid)
    finally:  # counted above; now nothing may outlive the test (the fork server follows its child)
        trainer.kill()
        trainer.wait()
        for proc in ([child] if child else []) + [p for p in psutil.process_iter() if _started_here(p, tmp_path)]:
            try:
                proc.kill()
            except psutil.Error:
                pass


def _started_here(proc: psutil.Process, folder) -> bool:
    try:
        return proc.cwd() == str(folder) and proc.pid != os.getpid()
    except psutil.Error:
        return False


@linux_only
@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_tied_child_dies_with_a_sigkilled_trainer(tmp_path, method):
    assert not _kill_trainer_and_watch_child(tmp_path, method, tied=True, watch_s=3.0)


@linux_only
def test_untied_child_outlives_the_trainer(tmp_path):
    # The control: without the tie the same child is still there, so the test above can fail.
    assert _kill_trainer_and_watch_child(tmp_path, "fork", tied=False, watch_s=1.0)


def _in_forked_child(body) -> int:
    """Run body() in a forked child; its exit status as os.waitstatus_to_exitcode gives it."""
    pid = os.fork()
    if pid == 0:
        try:
            os._exit(body() or 0)
        except BaseException:
            os._exit(99)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@linux_only
def test_a_forked_worker_asks_the_kernel_for_sigkill_and_calls_then():
    seen = []
    tie = DieWithTrainer(then=seen.append)  # built in the trainer (this process), called in the worker

    def body():
        tie(7)
        signal_number = ctypes.c_int()
        ctypes.CDLL(None).prctl(2, ctypes.byref(signal_number), 0, 0, 0)  # PR_GET_PDEATHSIG
        return 10 + seen[0] if signal_number.value == signal.SIGKILL else 1

    assert _in_forked_child(body) == 17


@linux_only
def test_a_worker_whose_trainer_is_already_gone_dies_at_once():
    sleeper = subprocess.Popen(["sleep", "30"])
    tie = DieWithTrainer()
    tie.trainer_pid, tie.trainer_started = sleeper.pid, worker_lifetime._start_time(sleeper.pid)
    sleeper.kill()
    sleeper.wait()  # the pid names no process now (or, after reuse, another start time)
    assert _in_forked_child(lambda: tie(0)) == -signal.SIGKILL


@linux_only
@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "polling /proc"])
def test_the_watch_returns_once_the_watched_process_is_gone(monkeypatch, pidfd):
    if not pidfd:
        monkeypatch.delattr(worker_lifetime.os, "pidfd_open", raising=False)
    sleeper = subprocess.Popen(["sleep", "30"])
    started = worker_lifetime._start_time(sleeper.pid)
    watch = threading.Thread(target=worker_lifetime._wait_for_exit, args=(sleeper.pid, started), daemon=True)
    watch.start()
    watch.join(1.0)
    assert watch.is_alive()  # still waiting while the process lives
    sleeper.kill()
    sleeper.wait()
    watch.join(3.0)
    assert not watch.is_alive()


def test_start_time_names_one_process():
    assert worker_lifetime._start_time(os.getpid()) == DieWithTrainer().trainer_started is not None
    assert worker_lifetime._start_time(2**22 + 1) is None  # above any pid_max


def test_pickles_for_spawn_and_forkserver_workers():
    tie = pickle.loads(pickle.dumps(DieWithTrainer(then=print)))
    assert (tie.trainer_pid, tie.then) == (os.getpid(), print)


def test_off_linux_it_only_calls_then(monkeypatch):
    monkeypatch.setattr(worker_lifetime.sys, "platform", "darwin")
    seen = []
    DieWithTrainer(then=seen.append)(3)  # in this process: with the tie it would watch itself
    assert seen == [3]


@linux_only
def test_oracle_tied_workers_yield_what_num_workers_0_yields():
    dataset = TensorDataset(torch.arange(40.0).view(20, 2))
    plain = [batch for (batch,) in DataLoader(dataset, batch_size=4)]
    tied = [batch for (batch,) in DataLoader(dataset, batch_size=4, num_workers=2,
                                             multiprocessing_context="fork",
                                             worker_init_fn=DieWithTrainer())]
    assert all(torch.equal(a, b) for a, b in zip(plain, tied, strict=True))
