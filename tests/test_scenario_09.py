"""Scenario 09: each spawn pitfall must fail with Python's and PyTorch's own words,
each fix must run, and spawn's per-epoch cost must show in process counts."""
import pytest

from conftest import run_scenario_json


@pytest.fixture(scope="module")
def report():
    return run_scenario_json("09", "all")


def _lines(run, text):
    return [line for line in run["output_tail"].splitlines() if text in line]


def test_broken_lambda_fails_in_the_main_process_before_any_batch(report):
    broken = report["variants"]["broken"]
    assert report["reproduced"], broken["breaches"]
    assert broken["outcome"] == "error" and broken["exit_code"] == 1
    assert broken["evidence"] == "AttributeError: Can't pickle local object 'main.<locals>.<lambda>'"
    # Pickled by the parent while it starts the first worker, not inside a worker.
    assert "popen_spawn_posix.py" in broken["output_tail"]
    assert not _lines(broken, "epoch 0")


def test_fixed_spawned_loader_yields_what_num_workers_0_yields(report):
    fixed = report["variants"]["fixed"]
    assert report["fixed"], fixed["breaches"]
    assert fixed["outcome"] == "completed" and fixed["exit_code"] == 0
    assert fixed["metrics"]["mismatched_batches"] == 0
    assert _lines(fixed, "epoch 1: 16 batches")
    # A spawned worker is a fresh interpreter with its own copy of torch, nothing shared
    # with the parent by fork: tens of MB of private memory each.
    assert fixed["metrics"]["sampled_worker_uss_peak_mb"] >= 50


def test_script_without_main_guard_stops_at_the_bootstrapping_check(report):
    broken = report["variants"]["broken_main_guard"]
    assert broken["as_expected"], broken["breaches"]
    assert broken["outcome"] == "error"
    # The worker's RuntimeError (Python's words), then the parent's (PyTorch's).
    assert broken["evidence"] == "current process has finished its bootstrapping phase."
    assert "you have forgotten to use the proper idiom" in broken["output_tail"]
    assert broken["output_tail"].splitlines()[-1].startswith("RuntimeError: DataLoader worker (pid(s)")


def test_main_guard_lets_workers_import_the_script_and_stop(report):
    fixed = report["variants"]["fixed_main_guard"]
    assert fixed["as_expected"], fixed["breaches"]
    assert fixed["outcome"] == "completed"
    assert len(_lines(fixed, "as __main__ in pid")) == 1
    assert len(_lines(fixed, "as __mp_main__ in pid")) == 2
    assert "bootstrapping" not in fixed["output_tail"]


def test_notebook_class_cannot_be_found_by_workers(report):
    broken = report["variants"]["broken_notebook"]
    assert broken["as_expected"], broken["breaches"]
    assert broken["outcome"] == "error"
    assert _lines(broken, "the notebook cell failed with RuntimeError: DataLoader worker (pid(s)")
    assert _lines(broken, "--- what the notebook shows ---")
    assert not _lines(broken, "sum of squares")


def test_notebook_class_imported_from_a_module_works(report):
    fixed = report["variants"]["fixed_notebook"]
    assert fixed["as_expected"], fixed["breaches"]
    assert fixed["outcome"] == "completed"
    assert "Can't get attribute" not in fixed["output_tail"]


def test_class_under_the_main_guard_is_missing_in_mp_main(report):
    broken = report["variants"]["broken_class_under_guard"]
    assert broken["as_expected"], broken["breaches"]
    assert broken["outcome"] == "error"
    assert "broken_class_under_guard.py'>" in broken["evidence"]


def test_spawn_restarts_workers_every_epoch_unless_persistent(report):
    cost = report["variants"]["spawn_cost"]
    assert cost["as_expected"], cost["breaches"]
    m = cost["metrics"]
    assert m["fork_workers_started"] == m["spawn_workers_started"] == 4  # 2 epochs x 2 workers
    assert m["spawn_persistent_workers_started"] == 2
    # Relative, not absolute: a later spawn epoch starts two interpreters, a persistent one none.
    assert m["spawn_later_epoch_s"] > m["spawn_persistent_later_epoch_s"]
    assert m["spawn_first_epoch_s"] > m["spawn_persistent_later_epoch_s"]
