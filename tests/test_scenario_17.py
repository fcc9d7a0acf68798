"""Scenario 17: what the runs show beyond their declarations (tests/test_scenarios.py checks
those): the Pool fails in a worker with Python's own assertion, wrapped by PyTorch; the fixed
loader yields what the Pool yields in the main process; clearing the daemon flag runs, at a
tenth of the throughput, and a killed worker's pool processes are orphaned and then exit."""
import re

import pytest
import torch
from torch.utils.data import DataLoader

from conftest import load_scenario_module, scenario_report

FOLDER = "17_process_pool_in_worker"


@pytest.fixture(scope="module")
def report():
    return scenario_report("17")


def test_broken_dies_with_pythons_daemonic_assertion_wrapped_by_the_loader(report):
    out = report["variants"]["broken"]["output_tail"]
    assert re.search(r"^AssertionError: Caught AssertionError in DataLoader worker process [01]\.$", out, re.MULTILINE)
    assert "Original Traceback (most recent call last):" in out
    # The worker's own traceback: the dataset line, the Pool starting its processes, Python's assert.
    assert re.search(r'broken\.py", line \d+, in __getitem__', out)
    assert re.search(r'multiprocessing/pool\.py", line \d+, in _repopulate_pool_static', out)
    assert out.rstrip().endswith("AssertionError: daemonic processes are not allowed to have children")
    assert "batch 0" not in out  # not one batch got through


def test_oracle_fixed_with_workers_yields_what_the_pool_yields_in_the_main_process():
    broken = load_scenario_module(FOLDER, "broken")
    fixed = load_scenario_module(FOLDER, "fixed")
    # Where the Pool is allowed (num_workers=0, the main process), broken.py is right: it is the reference.
    reference = broken.TiledSamples()
    expected = [reference[i][0] for i in (0, 13, 31)]
    loader = DataLoader(fixed.TiledSamples(), batch_size=4, num_workers=2, multiprocessing_context="fork")
    batches = list(loader)
    indices = torch.cat([i for _, i in batches])
    assert indices.tolist() == list(range(32))
    tiles = torch.cat([t for t, _ in batches])
    for position, tile in zip((0, 13, 31), expected):
        assert torch.equal(tiles[position], tile)
    assert len({t.numpy().tobytes() for t in tiles}) == 32  # the samples differ: the check can fail


def test_non_daemonic_workers_run_but_a_killed_worker_orphans_its_pool(report):
    myth = report["variants"]["myth_non_daemonic_workers"]
    out, figures = myth["output_tail"], myth["metrics"]
    assert "non-daemonic workers loaded 4 of 4 samples" in out
    # What the training loop sees when the kernel kills a worker, pool or no pool.
    assert re.search(r"RuntimeError: DataLoader worker \(pid \d+\) is killed by signal: Killed\.", out)
    # Every pool process of the killed worker was orphaned, and none outlived 3 s.
    assert figures["orphaned_pool_processes"] == 4
    assert figures["orphans_running_after_3s"] == 0


def test_a_pool_per_sample_costs_far_more_than_threads_or_workers(report):
    ratios = report["variants"]["measure_throughput"]["metrics"]
    threads = min(ratios["fixed_ratio"], ratios["four_threads_per_worker_ratio"])
    pools = max(ratios["pool_without_workers_ratio"], ratios["pool_in_non_daemonic_workers_ratio"])
    # Starting 4 processes for every sample: at least 3x slower than any way without them.
    assert pools * 3 < threads


class DecodedByAProcessPoolExecutor(torch.utils.data.Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, index):
        from concurrent.futures import ProcessPoolExecutor
        with ProcessPoolExecutor(max_workers=2) as pool:
            return sum(pool.map(abs, [-1, -2]))


def test_a_process_pool_executor_fails_the_same_way_in_a_worker():
    loader = DataLoader(DecodedByAProcessPoolExecutor(), batch_size=None, num_workers=1,
                        multiprocessing_context="fork")
    with pytest.raises(AssertionError, match="Caught AssertionError in DataLoader worker process 0") as caught:
        list(loader)
    message = str(caught.value)
    assert "concurrent/futures/process.py" in message and " in map" in message
    assert message.rstrip().endswith("AssertionError: daemonic processes are not allowed to have children")
