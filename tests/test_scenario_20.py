"""Scenario 20: DataLoader workers outliving a training job killed by SIGKILL, as measured.

The generic checks (each variant's outcome, evidence and bounds, nothing left running when the
runner is done) are tests/test_scenarios.py's.  Here: that the survivors were real, counted by
the script before it reaped them, that nothing else said a word, and that the script itself,
not the runner's clean-up, ended every one of them.
"""
import re
import time

import psutil
import pytest

from conftest import REPO_ROOT, scenario_report

FOLDER = REPO_ROOT / "scenarios" / "20_orphaned_workers_after_sigkill"
LEFT = re.compile(r"left behind: pid (\d+) \(([\w. ]+)\), parent now pid (\d+), thread name '([^']*)', ([\d.]+) MB USS")
KILLED = re.compile(r"cancelled: (SIG\w+) to the training job \(pid (\d+)\), which had started (\d+) processes")
COLLECTED_AT = time.time()  # before any variant of this session runs
TICK = re.compile(r"^│? ?(\w+): after ([\d.]+) s: (\d+) of (\d+) alive, ([\d.]+) MB USS", re.M)


@pytest.fixture(scope="module")
def report():
    return scenario_report("20")


def _out(report, variant):
    return report["variants"][variant]["output_tail"]


def _left(report, variant):
    return [(int(pid), kind, int(parent), name, float(uss))
            for pid, kind, parent, name, uss in LEFT.findall(_out(report, variant))]


def _ticks(report, variant):
    return [(float(t), int(alive), int(of), float(uss)) for _, t, alive, of, uss in TICK.findall(_out(report, variant))]


def _still_one_of_ours(pid: int) -> bool:
    """A live process by that pid, started during this session, that is a DataLoader worker, a
    multiprocessing helper or a script of this scenario (a pid reused by anyone else is not)."""
    try:
        proc = psutil.Process(pid)
        command = " ".join(proc.cmdline())
        return (proc.status() != psutil.STATUS_ZOMBIE and proc.create_time() >= COLLECTED_AT - 1
                and (proc.name() == "pt_data_worker" or "multiprocessing" in command or FOLDER.name in command))
    except psutil.Error:
        return False


def test_broken_leaves_workers_alive_under_another_parent_holding_memory(report):
    killed = KILLED.search(_out(report, "broken"))
    assert killed and killed.group(1) == "SIGKILL"
    left = _left(report, "broken")
    assert 1 <= len(left) <= 2
    for pid, kind, parent, name, uss in left:
        assert kind == "DataLoader worker" and name == "pt_data_worker"  # torch names its workers' thread
        assert parent != int(killed.group(2))  # re-parented: to init, or the runner's subreaper
        assert uss > 60  # at least its 64 MiB shard
    # Counted for the whole watch, past the 5 s interval of PyTorch's parent check.
    ticks = _ticks(report, "broken")
    assert ticks[-1][0] >= 6.5 and ticks[-1][1] == len(left)


def test_broken_says_nothing(report):
    out = _out(report, "broken")
    for words in ("Traceback", "exited unexpectedly", "Error", "Warning"):
        assert words not in out


def test_fixed_workers_go_with_the_job(report):
    ticks = _ticks(report, "fixed")
    assert ticks[-1][1] == 0 and ticks[-1][0] <= 3
    assert _left(report, "fixed") == []


def test_forkserver_leaves_the_fork_server_and_its_workers(report):
    left = _left(report, "broken_forkserver")
    kinds = sorted(kind for _, kind, _, _, _ in left)
    assert kinds == ["DataLoader worker", "DataLoader worker", "multiprocessing.forkserver",
                     "multiprocessing.resource_tracker"]
    server = next(pid for pid, kind, _, _, _ in left if kind == "multiprocessing.forkserver")
    # The workers' parent is still the fork server: PyTorch's os.getppid() check sees no change.
    assert all(parent == server for _, kind, parent, _, _ in left if kind == "DataLoader worker")


def test_fixed_under_forkserver_takes_the_fork_server_and_tracker_along(report):
    ticks = _ticks(report, "fixed_forkserver")
    assert ticks[0][2] == 4 and ticks[-1][1] == 0
    # The tracker removed the job's semaphores itself: it was not killed.
    assert "leaked semaphore objects to clean up at shutdown" in _out(report, "fixed_forkserver")


def test_every_survivor_was_reaped_by_the_script_after_counting(report):
    # The script checks itself (the runner's group kill would hide what it missed), and no pid it
    # named is alive now.
    for variant in ("broken", "broken_forkserver", "myth_daemon_workers"):
        out = _out(report, variant)
        left = _left(report, variant)
        assert left, variant
        assert f"reaped the {len(left)} left behind after counting them; alive now: 0; " in out
        assert re.search(r"the job's semaphores left in /dev/shm: 0 of \d+", out)
        assert out.index("left behind: pid") < out.index("reaped the")
        assert not any(_still_one_of_ours(pid) for pid, *_ in left), variant


def test_myth_the_parent_check_ends_workers_whose_exit_is_free(report):
    ticks = _ticks(report, "myth_workers_check_parent")
    # All alive at the kill (no signal ended them), all gone by the check.  Each worker checks 5 s after it
    # last began to wait for an index, not 5 s after the kill: one idle since before it goes sooner (a
    # fresh clone's full run saw one go within a second, the main process slowed by the suite beside it).
    assert ticks[0][1] == 2 and ticks[0][0] < 1
    assert ticks[-1][1] == 0 and ticks[-1][0] <= 7


def test_myth_daemon_workers_outlive_a_sigterm(report):
    out = _out(report, "myth_daemon_workers")
    assert "the job's DataLoader workers: daemon=[True, True]" in out
    assert KILLED.search(out).group(1) == "SIGTERM"
    assert _left(report, "myth_daemon_workers")


def test_nothing_of_the_scenario_is_left_running(report):
    assert not [p.pid for p in psutil.process_iter()
                if _still_one_of_ours(p.pid) and "--train" in " ".join(p.cmdline())]
