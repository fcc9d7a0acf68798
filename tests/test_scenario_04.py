"""Scenario 04: in a 16 MiB /dev/shm, broken runs out, fixed fits what it planned, the myths hold as measured.

tests/test_scenarios.py checks every declared outcome, evidence and bound; this file checks
what is particular to /dev/shm: the messages users see, where the loop waits, the planned
figures against the measured ones, and the platform refusal.
"""
import os
import re
import subprocess
import sys

from conftest import REPO_ROOT, scenario_report
from scenarios.host import EXIT_CANNOT_RUN

SCENARIO = REPO_ROOT / "scenarios" / "04_dev_shm_exhaustion"
SHM_MB, SAMPLES = 16, 640
NO_SPACE = re.compile(r"unable to allocate shared memory\(shm\) for file </torch_\w+>: "
                      r"No space left on device \(28\)")
PLAN = re.compile(r"in flight: (\d+) workers x prefetch_factor (\d+) \+ 2 = (\d+) batches of ([\d.]+) MiB "
                  r"= ([\d.]+) MiB in /dev/shm")


def _plan(run):
    """(workers, prefetch_factor, batches, MiB per batch, MiB in flight) from the plan line."""
    found = PLAN.search(run["output_tail"])
    assert found, run["output_tail"][-2000:]
    workers, prefetch, batches, batch_mb, planned_mb = found.groups()
    return int(workers), int(prefetch), int(batches), float(batch_mb), float(planned_mb)


def test_broken_fails_in_the_worker_with_torchs_own_message():
    broken = scenario_report("04")["variants"]["broken"]
    assert broken["exit_code"] == 1
    assert re.search(r"RuntimeError: Caught RuntimeError in DataLoader worker process \d\.", broken["output_tail"])
    assert "collate_tensor_fn" in broken["output_tail"]  # default_collate builds the batch in shared memory
    assert broken["metrics"]["samples"] < SAMPLES
    # It stopped because /dev/shm was full: less than one more 3.4 MiB batch was left.
    assert broken["metrics"]["shm_peak_mb"] > SHM_MB - 3.4


def test_torch_2_13_raises_no_bus_error():
    # Older PyTorch died of SIGBUS here; 2.13 reserves the space first and raises.
    broken = scenario_report("04")["variants"]["broken"]
    assert broken["signal"] is None
    assert "Bus error" not in broken["output_tail"]


def test_fixed_lowers_prefetch_and_fills_what_it_planned():
    fixed = scenario_report("04")["variants"]["fixed"]
    workers, prefetch, batches, batch_mb, planned_mb = _plan(fixed)
    assert (workers, prefetch, batches) == (2, 1, 4)
    assert "asked for 2 x 4 = 10 batches" in fixed["output_tail"]
    assert "sampled_worker_uss_peak_mb" in fixed["metrics"]  # it really ran workers
    peak = fixed["metrics"]["shm_peak_mb"]
    assert peak <= planned_mb + 0.5 < SHM_MB
    # More than the workers x prefetch_factor batches commonly counted were in /dev/shm at once
    # (scenario 10's grid shows the full "+ 2" at deeper settings).
    assert peak > workers * prefetch * batch_mb + 1
    assert not NO_SPACE.search(fixed["output_tail"])


def test_send_failure_drops_the_batch_and_the_loop_waits():
    hang = scenario_report("04")["variants"]["broken_send_hang"]
    tail = hang["output_tail"]
    assert "Timeout (0:00:10)!" in tail  # the script's stall watchdog, not an error
    assert "in _try_get_data" in tail and "in __next__" in tail  # where the loop waits
    assert "in _feed" in tail  # the workers' feeder threads, which dropped the batches
    assert "Caught RuntimeError in DataLoader worker" not in tail  # the loop was never told


def test_the_plan_also_covers_a_custom_collate_fn():
    run = scenario_report("04")["variants"]["fixed_custom_collate"]
    assert _plan(run)[:3] == (2, 1, 4)
    assert run["metrics"]["shm_peak_mb"] <= _plan(run)[4] + 0.5


def test_a_batch_that_cannot_fit_is_refused_before_any_worker_starts():
    run = scenario_report("04")["variants"]["fixed_batch_too_big"]
    assert run["exit_code"] == 1
    for remedy in ("--shm-size", "--ipc=host", "smaller batch_size", "num_workers=0"):
        assert remedy in run["evidence"]
    assert "16.9 MiB" in run["evidence"] and f"{SHM_MB:.1f} MiB is free" in run["evidence"]
    assert "Traceback" not in run["output_tail"]
    assert "in flight:" not in run["output_tail"]  # refused before a DataLoader existed
    assert "sampled_worker_uss_peak_mb" not in run["metrics"]  # and no worker ever ran


def test_file_system_strategy_makes_no_room():
    myth = scenario_report("04")["variants"]["myth_file_system"]
    assert "sharing strategy: file_system" in myth["output_tail"]
    assert "_new_using_filename_cpu" in myth["output_tail"]  # the strategy really changed
    assert NO_SPACE.search(myth["evidence"])
    assert myth["metrics"]["samples"] < SAMPLES


def test_without_user_namespaces_the_script_says_why_and_cannot_run():
    # No `unshare` on PATH stands in for a host that forbids user namespaces.
    done = subprocess.run([sys.executable, str(SCENARIO / "broken.py")], cwd=REPO_ROOT,
                          env=dict(os.environ, PATH="/nonexistent", PYTHONPATH=str(REPO_ROOT)),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_CANNOT_RUN == 3
    assert done.stderr.startswith("cannot run here: needs `unshare`")
    assert "Traceback" not in done.stderr
