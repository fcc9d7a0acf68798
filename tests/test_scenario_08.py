"""Scenario 08: kept batches exhaust `ulimit -n`; copies do not; file_system trades fds for /dev/shm files.

The generic checks (outcome, evidence, declared bounds, nothing left running) are
tests/test_scenarios.py's; here: PyTorch's words, one descriptor per kept batch, the
same answer from both remedies, and what a killed job leaves in /dev/shm.
"""
import re

import pytest

from conftest import scenario_report

PROGRESS = re.compile(r"^batch +(\d+): +(\d+) kept, +(\d+) open fds$", re.M)
ACCURACY = re.compile(r"^accuracy ([0-9.]+) over (\d+) reviews", re.M)
BATCHES = 313  # 5000 reviews in batches of 16


@pytest.fixture(scope="module")
def report():
    return scenario_report("08")


def _progress(run):
    return [tuple(map(int, m)) for m in PROGRESS.findall(run["output_tail"])]


def test_broken_fails_with_pytorchs_own_message(report):
    broken = report["variants"]["broken"]
    assert broken["evidence"].startswith("RuntimeError: Too many open files. Communication with "
                                         "the workers is no longer possible.")
    assert "`ulimit -n`" in broken["evidence"]
    assert "in _try_get_data" in broken["output_tail"]  # raised by the DataLoader, not the script
    assert not ACCURACY.search(broken["output_tail"])


def test_broken_holds_one_descriptor_per_kept_batch_up_to_the_limit(report):
    metrics = report["variants"]["broken"]["metrics"]
    assert 200 <= metrics["batches_kept"] < BATCHES
    assert 230 <= metrics["open_fds_peak"] <= 256  # the soft limit the script set
    progress = _progress(report["variants"]["broken"])
    assert len(progress) >= 4
    (_, kept0, fds0), (_, kept1, fds1) = progress[0], progress[-1]
    assert (fds1 - fds0) / (kept1 - kept0) >= 0.95


def test_fixed_keeps_copies_with_a_flat_descriptor_count(report):
    fixed = report["variants"]["fixed"]
    assert fixed["metrics"]["batches_kept"] == BATCHES
    assert fixed["metrics"]["open_fds_peak"] <= 40
    fds = [f for _, _, f in _progress(fixed)]
    assert len(fds) == 7 and max(fds) - min(fds) <= 5
    assert int(ACCURACY.search(fixed["output_tail"]).group(2)) == 5000


def test_file_system_strategy_completes_but_names_every_kept_batch_in_dev_shm(report):
    other = report["variants"]["fixed_file_system"]
    fixed = report["variants"]["fixed"]
    assert other["metrics"]["batches_kept"] == BATCHES
    assert other["metrics"]["open_fds_peak"] <= 40
    assert other["metrics"]["shm_files_peak"] >= 250  # about one file per kept batch
    # Same data, same model, same answer under either remedy.
    assert ACCURACY.search(other["output_tail"]).groups() == ACCURACY.search(fixed["output_tail"]).groups()


def test_file_system_files_outlive_a_job_killed_with_its_shm_manager(report):
    myth = report["variants"]["myth_file_system_leak"]
    metrics = myth["metrics"]
    assert metrics["shm_files_held_main_killed"] >= 150
    assert metrics["shm_files_left_main_killed"] == 0  # the managers unlinked them
    assert metrics["shm_files_held_job_killed"] >= 150
    # Nearly every file counted just before the kill is left: the loop may still free
    # a batch or two between the count and the kill, never more.
    assert metrics["shm_files_left_job_killed"] >= metrics["shm_files_held_job_killed"] - 5
    assert metrics["shm_files_removed"] == metrics["shm_files_left_job_killed"]
