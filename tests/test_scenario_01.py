"""Scenario 01: broken must hang with its workers on the lock, fixed must finish,
and the myth checks must hold as measured."""
import re

import pytest
import torch
from torch.utils.data import DataLoader

from conftest import REPO_ROOT, load_scenario_module, run_scenario_json

FOLDER = REPO_ROOT / "scenarios" / "01_fork_inherited_lock"


@pytest.fixture(scope="module")
def report():
    return run_scenario_json("01", "all")


def _line_of(script: str, needle: str, after: str) -> int:
    """The line number of the first `needle` after `after`: where the script waits."""
    lines = (FOLDER / script).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if after in line)
    return next(i for i in range(start, len(lines)) if needle in lines[i]) + 1


def _process_stacks(stacks: str) -> list[str]:
    return [block for block in re.split(r"\n\s*\n(?=Process \d+)", stacks) if block.strip()]


def test_broken_hangs_silently_before_the_first_batch(report):
    broken = report["variants"]["broken"]
    assert report["reproduced"], broken["breaches"]
    assert broken["outcome"] == "hang"
    out = broken["output_tail"]
    assert "training: waiting for the first batch" in out
    assert "step 0" not in out and "epoch done" not in out
    assert not re.search(r"Error|Traceback", out), "the hang should be silent, not an error"


def test_broken_workers_are_stuck_on_the_inherited_lock(report):
    stacks = report["variants"]["broken"]["stacks"]
    waits_at = _line_of("broken.py", "with self.lock:", after="def __getitem__(self, label)")
    stuck = [block for block in _process_stacks(stacks)
             if f"LabelCache.__getitem__ (broken.py:{waits_at})" in block]
    assert len(stuck) == 2, f"expected both workers waiting at broken.py:{waits_at}:\n{stacks}"
    assert all("_worker_loop" in block for block in stuck)
    # The main process is not stuck on a lock: it polls the workers' result queue.
    main = [block for block in _process_stacks(stacks) if "_try_get_data" in block]
    assert len(main) == 1 and "main (broken.py:" in main[0]
    # Its refresher is long past the fetch, sleeping: in the parent the lock was released.
    sleeps_at = _line_of("broken.py", "time.sleep(300)", after="def _refresh_forever")
    assert f"LabelCache._refresh_forever (broken.py:{sleeps_at})" in main[0]


def test_fixed_finishes_the_epoch(report):
    fixed = report["variants"]["fixed"]
    assert report["fixed"], fixed["breaches"]
    assert fixed["outcome"] == "completed" and fixed["exit_code"] == 0
    assert fixed["metrics"]["batches"] == 8
    assert len(re.findall(r"^step \d+: 32 images", fixed["output_tail"], flags=re.M)) == 8
    assert fixed["stacks"] == ""


def test_timeout_turns_the_hang_into_an_error_without_fixing_it(report):
    myth = report["variants"]["myth_timeout"]
    assert myth["as_expected"], myth["breaches"]
    assert myth["outcome"] == "error"
    assert "RuntimeError: DataLoader timed out after 5 seconds" in myth["output_tail"]
    assert "step 0" not in myth["output_tail"]


def test_spawn_alone_demands_a_picklable_dataset(report):
    run = report["variants"]["spawn_needs_pickle"]
    assert run["as_expected"], run["breaches"]
    assert run["outcome"] == "error"
    assert "TypeError: cannot pickle '_thread.lock' object" in run["output_tail"]
    assert "step 0" not in run["output_tail"]


def test_fixed_dataset_runs_under_every_start_method_and_spawn_costs_startup(report):
    run = report["variants"]["fixed_spawn"]
    assert run["as_expected"], run["breaches"]
    assert run["output_tail"].count("epoch done") == 3
    figures = run["metrics"]
    # A spawned worker imports torch afresh: at least a few tenths of a CPU-second, whatever the load.
    assert figures["spawn_startup_s"] >= 0.3 and figures["forkserver_startup_s"] >= 0.3
    assert figures["fork_first_batch_s"] >= 1.9  # each worker waits for its own first fetch


def test_global_or_init_forked_workers_see_the_parents_array(report):
    myth = report["variants"]["myth_global_vs_init"]
    assert myth["as_expected"], myth["breaches"]
    m = myth["metrics"]
    for version in ("global", "init"):
        assert m[f"fork_{version}_workers_reading_parent_array"] == 2
        assert m[f"fork_{version}_inits_in_workers"] == 0
        assert m[f"fork_{version}_worker_uss_mb"] < 30  # the 38 MB array was not copied
    assert m["spawn_global_workers_ok"] == 0 and m["spawn_init_workers_ok"] == 1
    assert "'NoneType' object is not subscriptable" in myth["output_tail"]


def test_oracle_fixed_workers_yield_what_the_main_process_yields():
    fixed = load_scenario_module(FOLDER.name, "fixed")
    parent_cache = fixed.LabelCache()
    parent_cache.refreshing.wait()  # fork while the parent's refresher holds its lock, as in the script
    dataset = fixed.TaggedImages()
    # timeout: a regression here must fail the test, not hang it.
    with_workers = list(DataLoader(dataset, batch_size=32, num_workers=2, timeout=60,
                                   multiprocessing_context="fork"))
    in_process = list(DataLoader(dataset, batch_size=32, num_workers=0))
    assert len(with_workers) == len(in_process) == 8
    for (images_w, names_w), (images_0, names_0) in zip(with_workers, in_process):
        assert torch.equal(images_w, images_0) and names_w == names_0
