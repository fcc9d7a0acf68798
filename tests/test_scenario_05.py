"""Scenario 05: per-worker copies and unlocked shared state repeat draws; the lock and
the sampler do not; a plain Lock deadlocks only when re-entered."""
import re

import pytest

from conftest import run_scenario_json

DRAWS = 4 * 128  # bags x instances: one epoch draws each instance exactly once


@pytest.fixture(scope="module")
def report():
    return run_scenario_json("05", "all")


def _marks_seen_by_main(run):
    seen, drawn = re.search(r"state shows (\d+) of (\d+) drawn instances as used", run["output_tail"]).groups()
    return int(seen), int(drawn)


def test_broken_workers_draw_from_their_own_copies(report):
    broken = report["variants"]["broken"]
    assert report["reproduced"], broken["breaches"]
    assert broken["outcome"] == "error" and broken["exit_code"] == 1
    figures = broken["metrics"]
    assert figures["draws"] == DRAWS
    assert figures["repeats"] >= 64  # about a quarter of the draws; the rule allows none
    # Not one of the workers' writes reached the main process.
    assert _marks_seen_by_main(broken) == (0, DRAWS - figures["repeats"])
    assert figures["lost_updates"] == DRAWS - figures["repeats"]


def test_unlocked_shared_state_loses_updates_without_deadlock(report):
    unlocked = report["variants"]["broken_unlocked"]
    assert unlocked["as_expected"], unlocked["breaches"]
    assert unlocked["outcome"] == "error" and unlocked["exit_code"] == 1  # wrong data, not a hang
    figures = unlocked["metrics"]
    assert figures["repeats"] >= 32 and figures["lost_updates"] >= 32
    # A shared tensor's writes do reach the main process, just not all of them.
    seen, drawn = _marks_seen_by_main(unlocked)
    assert 0 < seen == drawn - figures["lost_updates"] < drawn


def test_fixed_lock_draws_every_instance_once(report):
    fixed = report["variants"]["fixed"]
    assert report["fixed"], fixed["breaches"]
    assert fixed["outcome"] == "completed" and fixed["exit_code"] == 0
    assert fixed["metrics"]["draws"] == DRAWS
    assert fixed["metrics"]["repeats"] == 0 and fixed["metrics"]["lost_updates"] == 0
    assert _marks_seen_by_main(fixed) == (DRAWS, DRAWS)


def test_sampler_design_matches_num_workers_0_and_runs_ahead(report):
    run = report["variants"]["fixed_sampler"]
    assert run["as_expected"], run["breaches"]
    figures = run["metrics"]
    assert figures["repeats"] == 0 and figures["draws"] == DRAWS
    assert figures["same_as_num_workers_0"] == 1  # the oracle check, inside the script
    # Its price: 2 workers x prefetch_factor 2 visits drawn before the loop consumed them.
    assert 1 <= figures["sampler_lead_visits"] <= 5


def test_plain_lock_deadlocks_only_when_reentered(report):
    reentered = report["variants"]["myth_lock_reentered"]
    assert reentered["as_expected"], reentered["breaches"]
    assert reentered["outcome"] == "hang"
    out = reentered["output_tail"]
    # The watchdog's dump of the stuck worker: the nested acquire, from inside the locked block.
    assert re.search(r"myth_lock_reentered\.py\", line \d+ in refill_if_exhausted$", reentered["evidence"])
    # The watchdog ended the stuck workers; the DataLoader reports it in its own words.
    assert re.search(r"RuntimeError: DataLoader worker \(pid\(s\) [\d, ]+\) exited unexpectedly", out)
    assert "draws" not in reentered["metrics"]  # not one item came back
    # The same code with an RLock, and fixed.py's plain Lock taken once per item, both complete.
    for name in ("myth_rlock_reentered", "fixed"):
        run = report["variants"][name]
        assert run["outcome"] == "completed" and run["metrics"]["repeats"] == 0, name


def test_seed_manager_lock_does_not_deadlock(report):
    run = report["variants"]["myth_manager_lock"]
    assert run["as_expected"], run["breaches"]
    assert run["outcome"] == "completed"
    assert run["metrics"]["repeats"] == 0 and run["metrics"]["lost_updates"] == 0
    assert run["metrics"]["manager_lock_us"] > 0 and run["metrics"]["context_lock_us"] > 0


@pytest.mark.parametrize("again", [1, 2])
def test_the_race_is_reproduced_on_every_run(again):
    # Two more runs of the unlocked variant: the race must not depend on luck.
    run = run_scenario_json("05", "broken_unlocked")["variants"]["broken_unlocked"]
    assert run["as_expected"], run["breaches"]
    assert run["metrics"]["lost_updates"] >= 32 and run["metrics"]["repeats"] >= 32
