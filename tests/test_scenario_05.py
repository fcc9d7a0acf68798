"""Scenario 05: what each variant shows beyond its declaration (tests/test_scenarios.py checks
every variant's outcome, evidence and bounds): where the workers' marks end up, and how the
lock, the sampler and the myths compare."""
import re
from pathlib import Path

import pytest

from conftest import REPO_ROOT, scenario_report

DRAWS = 4 * 128  # bags x instances: one epoch draws each instance exactly once


@pytest.fixture(scope="module")
def report():
    return scenario_report("05")


def _marks_seen_by_main(run):
    seen, drawn = re.search(r"state shows (\d+) of (\d+) drawn instances as used", run["output_tail"]).groups()
    return int(seen), int(drawn)


def test_broken_workers_mark_their_own_copies_silently(report):
    broken = report["variants"]["broken"]
    repeats = broken["metrics"]["repeats"]
    # Not one of the workers' marks reached the main process: every distinct draw is missing there.
    assert _marks_seen_by_main(broken) == (0, DRAWS - repeats)
    assert broken["metrics"]["lost_updates"] == DRAWS - repeats
    # Wrong data, not a crash: PyTorch reports nothing, only the script's own count fails.
    assert broken["exit_code"] == 1 and "DataLoader worker" not in broken["output_tail"]


def test_unlocked_shared_state_reaches_the_main_process_but_loses_marks(report):
    unlocked = report["variants"]["broken_unlocked"]
    seen, drawn = _marks_seen_by_main(unlocked)
    # Unlike broken.py, the shared tensor does carry the workers' writes; the race drops some.
    assert 0 < seen == drawn - unlocked["metrics"]["lost_updates"] < drawn
    assert unlocked["outcome"] == "error" and "DataLoader worker" not in unlocked["output_tail"]  # no deadlock


@pytest.mark.parametrize("variant", ["fixed", "myth_rlock_reentered", "myth_manager_lock"])
def test_every_locked_variant_keeps_every_mark(report, variant):
    run = report["variants"][variant]
    assert _marks_seen_by_main(run) == (DRAWS, DRAWS)


def test_sampler_matches_num_workers_0_and_runs_ahead_by_the_prefetch(report):
    figures = report["variants"]["fixed_sampler"]["metrics"]
    assert figures["same_as_num_workers_0"] == 1 and figures["draws"] == DRAWS
    # Its price: 2 workers x prefetch_factor 2 visits drawn before the loop consumed them.
    assert 1 <= figures["sampler_lead_visits"] <= 2 * 2 + 1


def test_ids_cannot_tell_a_copy_from_shared_state_a_write_can(report):
    lines = report["variants"]["measure_copy_or_shared"]["output_tail"]
    said = dict(re.findall(r"^(broken|fixed)\.py: (.*)$", lines, flags=re.M))
    # Under fork the worker's copy sits at the main process's address: equal ids for both.
    assert said["broken"].startswith("id(dataset) in the workers equals the main process's: True")
    assert said["fixed"].startswith("id(dataset) in the workers equals the main process's: True")
    assert said["broken"].endswith("is_shared(): False; worker writes seen by the main process: 0 of 2")
    assert said["fixed"].endswith("is_shared(): True; worker writes seen by the main process: 2 of 2")


def test_plain_lock_deadlocks_only_when_reentered(report):
    reentered = report["variants"]["myth_lock_reentered"]
    out = reentered["output_tail"]
    # The watchdog's dump of the stuck worker: the nested acquire, from inside the locked block.
    assert re.search(r"myth_lock_reentered\.py\", line \d+ in refill_if_exhausted$", reentered["evidence"])
    assert re.search(r"synchronize\.py\", line \d+ in __enter__\n.*myth_lock_reentered\.py\", line \d+ "
                     r"in refill_if_exhausted\n.*myth_lock_reentered\.py\", line \d+ in draw_unused\n"
                     r".*fixed\.py\", line \d+ in __getitem__", out)
    # The watchdog ended the stuck worker; the DataLoader reports it in its own words.
    assert re.search(r"RuntimeError: DataLoader worker \(pid\(s\) [\d, ]+\) exited unexpectedly", out)
    assert "draws" not in reentered["metrics"]  # not one item came back
    # The same code with an RLock completes: re-entry, not the plain Lock, was the problem.
    assert report["variants"]["myth_rlock_reentered"]["metrics"]["repeats"] == 0


def test_manager_lock_costs_a_round_trip_per_use(report):
    figures = report["variants"]["myth_manager_lock"]["metrics"]
    # Each acquire and each release is a request to the manager's server process and its
    # answer (the declared bound compares it with the context's own Lock).
    assert figures["manager_lock_us"] >= 5


def test_forkserver_needs_the_lock_from_the_loaders_own_context(report):
    # The message a Python 3.14 user meets with fixed.py's fork-context lock, before any draw,
    # then the same fix with its lock from the forkserver context: no repeat, no lost mark.
    run = report["variants"]["measure_forkserver"]
    assert ("RuntimeError: A SemLock created in a fork context is being shared with a process "
            "in a spawn context") in run["output_tail"]
    seen, drawn = _marks_seen_by_main(run)
    assert seen == drawn == 512


def _doctor_on(variant: str, folder: Path):
    from scenarios.clinic.doctor.engine import examine_file

    target = folder / f"doctor_{variant}.py"
    target.write_text(  # the scenario's own dataset in the loader its main() builds
        "import sys\n"
        f"sys.path.insert(0, {str(REPO_ROOT / 'scenarios' / '05_shared_state_races')!r})\n"
        f"import {variant}\n"
        "from torch.utils.data import DataLoader\n\n\n"
        "def make_loader():\n"
        f"    return DataLoader({variant}.BagDataset(), batch_size=None, num_workers=2,\n"
        f"                      multiprocessing_context={variant}.CONTEXT)\n")
    return [f for f in examine_file(f"{target}:make_loader", only=["05"]) if f.scenario == "05"]


def test_the_doctor_sees_the_fault_in_broken_and_none_in_fixed(tmp_path):
    # A risk rests on what the probe saw: the main process's copy unchanged after the workers' draws,
    # and the same indices, read with the same seeds, drawing otherwise once draws were made.
    broken = _doctor_on("broken", tmp_path)
    assert [(f.level, f.check) for f in broken] == [("risk", "state-written-in-getitem")], broken
    assert "samples read again with the same seeds came out otherwise" in broken[0].evidence
    assert "main process's copy of dataset.unused is as it was before" in broken[0].evidence
    assert _doctor_on("fixed", tmp_path) == []  # shared memory: the workers' marks reach the main process
