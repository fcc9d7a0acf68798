"""Scenario 35: what the runs show beyond their declarations (tests/test_scenarios.py checks those):
two launches of 2 processes each, the second resumed from the first's checkpoint at step 9; without
the epoch, the resumed epoch has samples twice and as many never, job-wide, and each rank's resumed
batches are epoch 0's, with no word from Accelerate; with it, the uninterrupted run's batches.
Accelerate 1.15.0's own behaviour behind it, checked in this process on a loader prepared for rank 0
and rank 1 of 2: the loader's state holds its position and no epoch, a fresh loader given that state
goes on in epoch 0's order, and set_epoch() before its iterator puts it back in the epoch's own."""
import importlib.util
import re
import warnings

import pytest
from conftest import REPO_ROOT, scenario_report

SAMPLES, BATCH, RANKS = 96, 8, 2
COUNTS = re.compile(r"^epoch 1 counts per sample: ([\d ]+)$", re.M)
RANK_LINE = re.compile(r"^rank (\d): of its 48 samples of epoch 1 \(uninterrupted\), across the resume "
                       r"(\d+) trained twice, (\d+) never; (\d) of its 3 resumed steps had the uninterrupted batch, "
                       r"(\d) the batch of epoch 0's order", re.M)
accelerate = pytest.importorskip("accelerate")


@pytest.fixture(scope="module")
def report():
    return scenario_report("35")


def counts(run):
    return [int(c) for c in COUNTS.search(run["output_tail"]).group(1).split()]


@pytest.mark.parametrize("variant", ["broken", "fixed"])
def test_two_launches_of_two_processes_the_second_resumed_from_step_9(report, variant):
    out = report["variants"][variant]["output_tail"]
    assert "launch 1: 2 processes trained steps 1-12 uninterrupted, with a checkpoint at step 9 " \
           "(epoch 1, step 3 of 6)" in out
    assert "launch 2: 2 fresh processes resumed from that checkpoint and trained steps 10-12" in out
    assert sorted(int(rank) for rank, *_ in RANK_LINE.findall(out)) == [0, 1]
    assert "Traceback" not in out


def test_broken_trains_as_many_samples_twice_as_never_and_nothing_is_said(report):
    run = report["variants"]["broken"]
    epoch_1 = counts(run)
    assert sum(epoch_1) == SAMPLES  # 12 batches of 8 in the epoch, across both ranks
    assert epoch_1.count(0) == sum(c - 1 for c in epoch_1 if c > 1) == run["metrics"]["samples_never_seen"] > 0
    for rank, twice, never, same, epoch_0 in RANK_LINE.findall(run["output_tail"]):
        assert (int(same), int(epoch_0)) == (0, 3), f"rank {rank}"  # every resumed batch: epoch 0's order
        assert int(never) > 0
    # What the libraries print: torchdata's deprecation warning of torch.set_vital, as a loader is built.
    said = [line for line in run["output_tail"].splitlines() if "Warning" in line]
    assert all("'set_vital' is deprecated" in line for line in said)


def test_fixed_trains_every_sample_once_with_the_uninterrupted_batches(report):
    run = report["variants"]["fixed"]
    assert counts(run) == [1] * SAMPLES
    assert [(same, epoch_0) for _, _, _, same, epoch_0 in RANK_LINE.findall(run["output_tail"])] == [("3", "0")] * 2


def test_only_the_loaders_whose_order_is_drawn_from_the_epoch_come_back_with_it(report):
    figures = report["variants"]["measure_resume_paths"]["metrics"]  # skipped where it did not run
    assert figures["torchdata_1proc_rank0"] == 9  # torchdata's own RandomSampler keeps its generator in the state
    for sampler in ("accelerate_seedable", "accelerate_default"):
        assert figures[f"{sampler}_1proc_rank0"] == 0  # one process is no protection through Accelerate
    for rank in (0, 1):
        for case in ("accelerate_seedable_2proc", "torch_distributed_2proc"):
            assert (figures[f"{case}_rank{rank}"], figures[f"{case}_rank{rank}_epoch_set"]) == (0, 3)
        assert figures[f"accelerate_default_2proc_rank{rank}_epoch_set"] == 0  # no epoch draws that order


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="'set_vital' is deprecated")
        yield


def _prepared(rank):
    """The loader as Accelerate prepares it for one of 2 processes (no process group is needed to build it)."""
    import torch
    from accelerate.data_loader import prepare_data_loader
    from torch.utils.data import DataLoader
    torch.manual_seed(0)  # what set_seed(0) does for the sampler's seed
    return prepare_data_loader(DataLoader(list(range(SAMPLES)), batch_size=BATCH, shuffle=True),
                               num_processes=RANKS, process_index=rank, put_on_device=False,
                               use_seedable_sampler=True, use_stateful_dataloader=True)


@pytest.mark.parametrize("rank", range(RANKS))
def test_accelerate_restores_the_position_in_epoch_0s_order_unless_the_epoch_is_set(rank):
    job = _prepared(rank)
    epoch_0 = [b.tolist() for b in job]
    epoch_1 = iter(job)
    before = [next(epoch_1).tolist() for _ in range(3)]
    state = job.state_dict()
    after = [b.tolist() for b in epoch_1]
    assert len(before + after) == SAMPLES // BATCH // RANKS and before + after != epoch_0
    assert state["_sampler_iter_yielded"] == 3
    assert not any("epoch" in key or "iteration" in key for key in state)  # the position, and no epoch
    resumed = _prepared(rank)
    resumed.load_state_dict(state)
    assert [b.tolist() for b in resumed] == epoch_0[3:]  # the right batch of the wrong epoch's order
    fixed = _prepared(rank)
    fixed.load_state_dict(state)
    fixed.set_epoch(1)
    assert [b.tolist() for b in fixed] == after


def test_the_scripts_model_of_the_seedable_order_is_accelerates():
    path = REPO_ROOT / "scenarios" / "35_distributed_resume_order" / "_relaunched_job.py"
    spec = importlib.util.spec_from_file_location("_relaunched_job", path)
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    for rank in range(RANKS):
        prepared = _prepared(rank)
        assert [b.tolist() for b in prepared] == job.seedable_order(0, 0, SAMPLES, BATCH, rank)
        assert [b.tolist() for b in prepared] == job.seedable_order(0, 1, SAMPLES, BATCH, rank)
