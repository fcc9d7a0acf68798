"""Scenario 09: each spawn pitfall must fail with Python's and PyTorch's own words,
each fix must run, and spawn's per-epoch cost must show in process counts.

The generic checks (outcome, evidence, declared bounds, nothing left running) are
tests/test_scenarios.py's; here: the warning and the chains of errors users see, where
they are raised, and the comparisons between variants.
"""
import re

import pytest

from conftest import scenario_report

PICKLE_WARNING = ("UserWarning: Got pickle error when attempting to start a worker Process. "
                  "This might be because the worker Process arguments are not picklable. "
                  "Python 3.14+ changed the multiprocessing start method in non-Mac POSIX platforms "
                  "to 'forkserver', which requires the worker Process arguments to be picklable.")


@pytest.fixture(scope="module")
def report():
    return scenario_report("09")


def _lines(run, text):
    return [line for line in run["output_tail"].splitlines() if text in line]


def _worker_death_chain(out):
    """The two errors a spawned worker's exit with status 1 gives, in their order."""
    first = re.search(r"RuntimeError: DataLoader worker \(pid (\d+)\) exited unexpectedly with exit code 1\. "
                      r"Details are lost due to multiprocessing\.", out)
    last = re.search(r"RuntimeError: DataLoader worker \(pid\(s\) ([\d, ]+)\) exited unexpectedly$", out, re.M)
    return first, last


def test_broken_lambda_fails_in_the_main_process_before_any_batch(report):
    broken = report["variants"]["broken"]
    assert broken["evidence"] == "AttributeError: Can't pickle local object 'main.<locals>.<lambda>'"
    out = broken["output_tail"]
    # PyTorch's own hint comes first, then the pickling error, raised by the parent while
    # it starts the first worker, not inside a worker.
    assert PICKLE_WARNING in out
    assert out.index(PICKLE_WARNING) < out.index("AttributeError: Can't pickle local object")
    assert "popen_spawn_posix.py" in out
    assert not _lines(broken, "epoch 0")


def test_fixed_spawned_loader_yields_what_num_workers_0_yields(report):
    fixed = report["variants"]["fixed"]
    assert _lines(fixed, "epoch 1: 16 batches")
    assert "Got pickle error" not in fixed["output_tail"]
    # A spawned worker is a fresh interpreter with its own copy of torch, nothing shared
    # with the parent by fork: over 100 MB of private memory each.
    assert fixed["metrics"]["sampled_worker_uss_peak_mb"] >= 100


def test_script_without_main_guard_stops_at_the_bootstrapping_check(report):
    broken = report["variants"]["broken_main_guard"]
    out = broken["output_tail"]
    # The worker's RuntimeError (Python's words) ...
    assert broken["evidence"] == "current process has finished its bootstrapping phase."
    assert "you have forgotten to use the proper idiom" in out
    # ... then PyTorch's two, chained: the SIGCHLD handler's report of the exit status,
    # raised at once (not at the 5 s status check), then the iterator's.
    first, last = _worker_death_chain(out)
    assert first and last, out[-2000:]
    assert "signal_handling.py" in out[:first.start()]
    assert first.start() < out.index("The above exception was the direct cause") < last.start()
    assert first.group(1) in last.group(1).split(", ")
    assert out.splitlines()[-1] == last.group(0)


def test_main_guard_lets_workers_import_the_script_and_stop(report):
    fixed = report["variants"]["fixed_main_guard"]
    assert len(_lines(fixed, "as __main__ in pid")) == 1
    assert len(_lines(fixed, "as __mp_main__ in pid")) == 1  # its one spawned worker
    assert "bootstrapping" not in fixed["output_tail"]


def test_notebook_class_cannot_be_found_by_workers(report):
    broken = report["variants"]["broken_notebook"]
    assert _lines(broken, "the notebook cell failed with RuntimeError: DataLoader worker (pid(s)")
    assert _lines(broken, "--- what the notebook shows ---")
    assert not _lines(broken, "sum of squares")


def test_notebook_class_imported_from_a_module_works(report):
    assert "Can't get attribute" not in report["variants"]["fixed_notebook"]["output_tail"]


def test_class_under_the_main_guard_is_missing_in_mp_main(report):
    broken = report["variants"]["broken_class_under_guard"]
    assert "broken_class_under_guard.py'>" in broken["evidence"]
    first, last = _worker_death_chain(broken["output_tail"])
    assert first and last


def test_spawn_restarts_workers_every_epoch_unless_persistent(report):
    m = report["variants"]["measure_spawn_cost"]["metrics"]
    # Relative, not absolute: a later spawn epoch starts an interpreter, a persistent one none.
    assert m["spawn_later_epoch_s"] > m["spawn_persistent_later_epoch_s"]
    assert m["spawn_first_epoch_s"] > m["spawn_persistent_later_epoch_s"]
    assert m["spawn_later_epoch_s"] > m["fork_later_epoch_s"]
