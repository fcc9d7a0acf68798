"""Scenario 19: a worker killed by the kernel's OOM killer inside a real memory cgroup.

The generic checks (each variant's outcome, evidence and bounds, nothing left running) are
tests/test_scenarios.py's; here: PyTorch's words, the kernel's own count and the process it
took agree; the fixed epoch reads what one process reads; no memory cgroup is left behind,
even by a run killed before its cleanup; and "cannot run here" where no group can be made.
"""
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, scenario_report
from scenarios import memory_cgroup, memory_group
from scenarios.synthetic_data import detection_annotations

RECORDS, LIMIT_MB = 100_000, 320
KILLED = re.compile(r"RuntimeError: DataLoader worker \(pid (\d+)\) is killed by signal: Killed\.")
EXITED = re.compile(r"RuntimeError: DataLoader worker \(pid\(s\) (\d+)\) exited unexpectedly")
CANNOT = memory_cgroup.problem()
needs_cgroup = pytest.mark.skipif(CANNOT is not None, reason=f"cannot run here: {CANNOT}")


@pytest.fixture(scope="module")
def report():
    if CANNOT:
        pytest.skip(f"cannot run here: {CANNOT}")
    return scenario_report("19")


def test_broken_pytorch_and_the_kernel_name_the_same_worker(report):
    broken = report["variants"]["broken"]
    out = broken["output"]
    killed = KILLED.search(out)
    assert killed, out[-3000:]
    exited = EXITED.search(out)
    if exited:  # chained when SIGCHLD arrives while the main process waits for data
        assert exited.group(1) == killed.group(1)
    # The group's own counter (memory.oom_control or memory.events): the kernel did it (once,
    # or twice when the other worker reaches the limit before the first one's memory is freed).
    assert 1 <= broken["metrics"]["oom_kills"] <= 2
    ours = re.findall(r"the kernel's OOM killer killed (\w+) \(pid (\d+)\)", out)
    assert ours and all(name.startswith("worker") for name, _ in ours)
    assert killed.group(1) in {pid for _, pid in ours}  # PyTorch names one the kernel killed
    kernel = re.findall(r"kernel log: Memory cgroup out of memory: Killed process (\d+) \((\S+)\)", out)
    if kernel:  # where dmesg is readable, the kernel's own lines say so too
        assert {pid for pid, _ in kernel} == {pid for _, pid in ours}
        assert {name for _, name in kernel} == {"pt_data_worker"}
    # SIGKILL leaves the worker no time to write: no traceback of its own, as users report.
    assert "in DataLoader worker process" not in out


def test_broken_the_victim_had_the_most_rss_and_the_charge_reached_the_limit(report):
    broken = report["variants"]["broken"]
    figures = broken["metrics"]
    assert figures["victim_rank"] == 1 and figures["victim_is_worker"] == 1
    assert figures["victim_rss_mb"] > figures["main_rss_before_kill_mb"]
    charges = [float(c) for c in re.findall(r"^memory t=\S+ charge=([\d.]+) limit=320 oom_kills=0",
                                            broken["output"], re.M)]
    assert len(charges) >= 5 and max(charges) >= 0.9 * LIMIT_MB
    assert "within the 320 MiB limit" not in broken["output"]


def test_fixed_reads_every_record_within_the_same_limit(report):
    fixed = report["variants"]["fixed"]
    objects = int(re.search(r"read 100000 records, (\d+) annotated objects", fixed["output"]).group(1))
    # The oracle: every record's labels counted in one process, no loader, no limit.
    assert objects == sum(len(record["labels"]) for record in detection_annotations(RECORDS))
    assert fixed["metrics"]["oom_kills"] == 0
    assert fixed["metrics"]["peak_charge_mb"] < LIMIT_MB / 2
    assert not KILLED.search(fixed["output"]) and "Killed" not in fixed["output"]


def test_myth_list_in_init_the_kernel_kills_the_training_process_itself(report):
    myth = report["variants"]["myth_list_in_init"]
    out = myth["output"]
    assert myth["metrics"]["training_exit_code"] == -9
    # The first kill took the main process; its orphaned workers, still copying, may meet a second.
    assert myth["metrics"]["victim_is_worker"] == 0 and myth["metrics"]["oom_kills"] >= 1
    kernel = re.search(r"kernel log: Memory cgroup out of memory: Killed process \d+ \((\S+)\)", out)
    if kernel:  # the interpreter's own name (python, python3), not a pt_data_worker
        assert kernel.group(1).startswith("python")
    # The main process died: PyTorch had no chance to say anything, nor Python in it (an orphaned
    # worker's multiprocessing thread may still print a traceback of its own as it loses its parent).
    assert not KILLED.search(out) and not EXITED.search(out)
    assert 'myth_list_in_init.py", line' not in out


def test_myth_sharing_strategy_a_worker_is_killed_just_the_same(report):
    myth = report["variants"]["myth_sharing_strategy"]
    assert KILLED.search(myth["output"]) and myth["metrics"]["oom_kills"] >= 1


def test_no_memory_cgroup_is_left_by_any_run(report):
    # Every run this session makes of 19 (its myths too under `make test-full`) has ended by now.
    assert {"broken", "fixed"} <= set(report["variants"])
    assert memory_group.leftover_groups() == []


def _inside(limit_mb: int, seconds: float) -> subprocess.Popen:
    code = ("import time\nfrom scenarios.memory_cgroup import memory_limit\n"
            f"with memory_limit({limit_mb}):\n    print('inside', flush=True)\n    time.sleep({seconds})\n")
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    return subprocess.Popen([sys.executable, "-c", code], cwd=REPO_ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


@needs_cgroup
def test_a_group_left_by_a_killed_run_is_removed_by_the_next():
    # What a runner's time limit does: SIGKILL the process inside, before its cleanup can run.
    killed = _inside(64, 60)
    try:
        assert killed.stdout.readline() == "inside\n"
        name = f"{memory_group.PREFIX}{killed.pid}"
        assert name in memory_group.leftover_groups()
    finally:
        killed.kill()
        killed.wait()
        killed.stdout.close()
    assert name in memory_group.leftover_groups()  # nothing ran to remove it
    following = _inside(64, 0)
    out, _ = following.communicate(timeout=60)
    assert following.returncode == 0, out
    assert "metric oom_kills=0" in out and "metric limit_mb=64" in out
    assert memory_group.leftover_groups() == []


def test_cannot_run_here_without_a_memory_controller(monkeypatch, capsys):
    monkeypatch.setattr(memory_group, "own_groups", lambda: {})
    with pytest.raises(SystemExit) as end:
        with memory_cgroup.memory_limit(64):
            pass
    assert end.value.code == 3
    assert "cannot run here: no cgroup memory controller is mounted" in capsys.readouterr().err


def test_cannot_run_here_where_no_child_group_can_be_made(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(memory_group, "own_groups", lambda: {"v1": tmp_path / "not-a-cgroup"})
    with pytest.raises(SystemExit) as end:
        with memory_cgroup.memory_limit(64):
            pass
    assert end.value.code == 3
    err = capsys.readouterr().err
    assert "cannot run here: cannot create a memory cgroup below not-a-cgroup" in err
    assert "Delegation in the kernel's cgroup-v2 guide" in err  # what would do, named



def test_the_victims_rank_counts_only_processes_larger_beyond_a_tie():
    from scenarios.cgroup_watch import _rank
    # {pid: (RSS, what the kernel ranks by)}, one sample before the kill: CI's case.
    sizes = {1: (239.4, 240.2), 2: (276.8, 277.5), 3: (276.1, 276.8)}
    assert _rank(3, sizes) == 1  # 0.7 MiB less than the other worker: a tie at this resolution
    assert _rank(1, sizes) == 3  # the training process, far below both
    assert _rank(3, {**sizes, 2: (300.0, 300.0)}) == 2  # 8% larger: ranked above
