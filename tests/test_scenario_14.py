"""Scenario 14: what the runs show beyond their declarations (tests/test_scenarios.py checks those):
the persistent workers stay at epoch 0 while the loop moves on, the fixed ones follow it in the
same processes, PyTorch refuses persistent_workers with num_workers=0, and new workers every
epoch are fresh but cost a start each epoch."""
import re

import pytest
import torch
from torch.utils.data import DataLoader

from conftest import REPO_ROOT, load_scenario_module, scenario_report

SCENARIO_DIR = REPO_ROOT / "scenarios" / "14_persistent_workers_stale_epoch"
EPOCH_LINE = re.compile(r"^epoch (\d): loop set epoch \d, workers used epoch \[([\d, ]+)\], "
                        r"noise (\d\.\d\d) \(curriculum: (\d\.\d\d)\)$", re.M)


@pytest.fixture(scope="module")
def report():
    return scenario_report("14")


def epochs(run):
    """{epoch: (epochs the workers used, noise measured, noise the curriculum asks for)}"""
    return {int(e): ([int(u) for u in used.split(",")], float(noise), float(asked))
            for e, used, noise, asked in EPOCH_LINE.findall(run["output_tail"])}


def test_broken_workers_stay_at_epoch_0_and_the_curriculum_never_rises(report):
    broken = report["variants"]["broken"]
    seen = epochs(broken)
    assert sorted(seen) == [0, 1, 2, 3]
    for epoch in (1, 2, 3):
        used, noise, asked = seen[epoch]
        assert used == [0] and noise == 0.0 and asked > 0
    # Every sample after epoch 0 is stale: a quarter of the samples are right, by luck.
    figures = broken["metrics"]
    assert figures["stale_samples"] == figures["samples"] * 3 // 4


def test_fixed_workers_follow_the_loop_in_the_same_processes(report):
    fixed, broken = report["variants"]["fixed"], report["variants"]["broken"]
    for epoch, (used, noise, asked) in epochs(fixed).items():
        assert used == [epoch]
        assert abs(noise - asked) <= 0.1, (epoch, noise, asked)
    # The fix keeps what persistent_workers is for: the same worker processes all along.
    assert fixed["metrics"]["worker_processes"] == broken["metrics"]["worker_processes"] == 2


def test_persistent_workers_with_num_workers_0_is_refused_by_the_dataloader(report):
    out = report["variants"]["broken_num_workers_0"]["output_tail"]
    assert re.search(r'torch/utils/data/dataloader\.py", line \d+, in __init__', out)
    assert out.strip().splitlines()[-1] == "ValueError: persistent_workers option needs num_workers > 0"
    assert "batches per epoch" not in out


def test_new_workers_each_epoch_are_fresh_but_start_every_epoch(report):
    figures = report["variants"]["measure_alternatives"]["metrics"]
    # Same failure as broken.py when persistent; none when the workers are new each epoch,
    # and none with num_workers=0 either, which is why debugging in the main process hides it.
    assert figures["persistent_stale_samples"] == report["variants"]["broken"]["metrics"]["stale_samples"]
    assert figures["restart_stale_samples"] == figures["no_workers_stale_samples"] == 0
    assert figures["restart_processes"] == 4 * figures["fixed_processes"]
    # A new epoch waits for new workers before its first batch; persistent ones are waiting already.
    assert figures["restart_first_batch_ms"] > figures["fixed_first_batch_ms"]


def test_oracle_fixed_loader_with_workers_yields_what_num_workers_0_yields():
    fixed = load_scenario_module(SCENARIO_DIR.name, "fixed")
    runs = {}
    for workers in (0, 2):
        dataset = fixed.EpochInIndices(fixed.CurriculumDataset())
        options = {"persistent_workers": True, "multiprocessing_context": "fork"} if workers else {}
        loader = DataLoader(dataset, sampler=dataset.sampler(), batch_size=16, num_workers=workers, **options)
        runs[workers] = []
        for epoch in range(fixed.EPOCHS):
            dataset.set_epoch(epoch)
            runs[workers] += [(b["x"], b["index"], b["epoch_used"]) for b in loader]
    assert len(runs[0]) == len(runs[2]) == fixed.EPOCHS * fixed.SAMPLES // 16
    for serial, parallel in zip(runs[0], runs[2]):
        assert all(torch.equal(a, b) for a, b in zip(serial, parallel))
