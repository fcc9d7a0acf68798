"""Scenario 04: in a 16 MiB /dev/shm, broken must run out, fixed must fit, the myths hold as measured."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT, run_scenario_json

SCENARIO = REPO_ROOT / "scenarios" / "04_dev_shm_exhaustion"
NO_SPACE = re.compile(r"unable to allocate shared memory\(shm\) for file </torch_\w+>: "
                      r"No space left on device \(28\)")


@pytest.fixture(scope="module")
def report():
    return run_scenario_json("04", "all")


def _planned_mb(run):
    return float(re.search(r"= ([\d.]+) MiB in flight", run["output_tail"]).group(1))


def test_broken_fails_in_the_worker_with_torchs_own_message(report):
    broken = report["variants"]["broken"]
    assert report["reproduced"], broken["breaches"]
    assert broken["outcome"] == "error" and broken["exit_code"] == 1
    assert NO_SPACE.search(broken["evidence"])
    tail = broken["output_tail"]
    assert re.search(r"RuntimeError: Caught RuntimeError in DataLoader worker process \d\.", tail)
    assert "collate_tensor_fn" in tail  # default_collate builds the batch in shared memory
    assert broken["metrics"]["samples"] < 640
    # It stopped because /dev/shm was full: less than one more 3.4 MiB batch was left.
    assert broken["metrics"]["shm_peak_mb"] > 16 - 3.4


def test_torch_2_13_raises_no_bus_error(report):
    # Seed-era PyTorch died of SIGBUS here; 2.13 reserves the space first and raises.
    broken = report["variants"]["broken"]
    assert broken["signal"] is None
    assert "Bus error" not in broken["output_tail"]


def test_fixed_reads_every_sample_within_its_planned_budget(report):
    fixed = report["variants"]["fixed"]
    assert report["fixed"], fixed["breaches"]
    assert fixed["outcome"] == "completed" and fixed["exit_code"] == 0
    assert "shm budget: 2 workers x prefetch_factor 1 =" in fixed["output_tail"]
    assert "asked for 2 x 4" in fixed["output_tail"]
    assert fixed["metrics"]["samples"] == 640
    assert fixed["metrics"]["shm_peak_mb"] <= _planned_mb(fixed) + 0.5 < 16
    assert fixed["metrics"]["sampled_worker_uss_peak_mb"] > 0  # it really ran workers
    assert not NO_SPACE.search(fixed["output_tail"])


def test_send_failure_drops_the_batch_and_the_loop_stops(report):
    hang = report["variants"]["broken_send_hang"]
    assert hang["as_expected"], hang["breaches"]
    assert hang["outcome"] == "hang"
    tail = hang["output_tail"]
    assert "Timeout (0:00:10)!" in tail  # the script's stall watchdog, not an error
    assert "in _try_get_data" in tail and "in __next__" in tail  # where the loop waits
    assert "in _feed" in tail  # the workers' feeder threads, which dropped the batches
    assert NO_SPACE.search(hang["evidence"])
    assert "Caught RuntimeError in DataLoader worker" not in tail  # the loop was never told


def test_fixed_settings_also_cover_a_custom_collate_fn(report):
    run = report["variants"]["fixed_custom_collate"]
    assert run["as_expected"], run["breaches"]
    assert run["metrics"]["samples"] == 640
    assert run["metrics"]["shm_peak_mb"] <= _planned_mb(run) + 0.5


def test_a_batch_that_cannot_fit_is_refused_before_any_worker_starts(report):
    run = report["variants"]["fixed_batch_too_big"]
    assert run["as_expected"], run["breaches"]
    assert run["outcome"] == "error" and run["exit_code"] == 1
    for remedy in ("--shm-size", "--ipc=host", "smaller batch_size", "num_workers=0"):
        assert remedy in run["evidence"]
    assert "16.9 MiB" in run["evidence"] and "16.0 MiB is free" in run["evidence"]
    assert "Traceback" not in run["output_tail"]
    assert "shm budget:" not in run["output_tail"]  # refused before a DataLoader existed


def test_file_system_strategy_makes_no_room(report):
    myth = report["variants"]["myth_file_system"]
    assert myth["as_expected"], myth["breaches"]
    assert "sharing strategy: file_system" in myth["output_tail"]
    assert "_new_using_filename_cpu" in myth["output_tail"]  # the strategy really changed
    assert NO_SPACE.search(myth["evidence"])
    assert myth["metrics"]["samples"] < 640


def test_without_user_namespaces_the_script_says_why_and_exits_77():
    # No `unshare` on PATH stands in for a host that forbids user namespaces.
    done = subprocess.run([sys.executable, str(SCENARIO / "broken.py")], cwd=REPO_ROOT,
                          env=dict(os.environ, PATH="/nonexistent", PYTHONPATH=str(REPO_ROOT)),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 77
    assert done.stderr.startswith("cannot run here: needs `unshare`")
    assert "Traceback" not in done.stderr
