"""Scenario 15: what the runs show beyond their declarations (tests/test_scenarios.py checks those):
without set_epoch each rank gets epoch 0's order again every epoch, with no message from PyTorch;
with it every epoch is new while the ranks still split each epoch between them (the padding
duplicate the only sample both see); the two drop_last options; and the 2 ranks are bounded."""
import re
import tempfile
import time

import psutil
import pytest
import torch.distributed as dist
from torch.multiprocessing import ProcessRaisedException

from conftest import load_scenario_module, scenario_report

FOLDER = "15_distributed_sampler_set_epoch"
SAMPLES, EPOCHS = 101, 4
EPOCH_LINE = re.compile(r"^epoch (\d): rank 0 got (\[[\d, ]+\])\.\.\., rank 1 got (\[[\d, ]+\])\.\.\.; "
                        r"order of epoch 0 on (\d) of 2 ranks; (\d+) indices, (\d+) distinct, (\d+) on both ranks$",
                        re.M)


@pytest.fixture(scope="module")
def report():
    return scenario_report("15")


def epoch_lines(run):
    return {int(e): (first0, first1, int(repeats), int(total), int(distinct), int(shared))
            for e, first0, first1, repeats, total, distinct, shared in EPOCH_LINE.findall(run["output_tail"])}


def test_broken_repeats_epoch_0_on_both_ranks_and_pytorch_says_nothing(report):
    broken = report["variants"]["broken"]
    lines = epoch_lines(broken)
    assert sorted(lines) == list(range(EPOCHS))
    assert all(lines[e][:2] == lines[0][:2] and lines[e][2] == 2 for e in lines)
    # The only message is the script's own: no warning or traceback from torch.
    assert not re.search(r"Warning|Traceback|torch/", broken["output_tail"])
    # Each rank trains on its own half for the whole run.
    assert broken["metrics"]["min_samples_seen_by_a_rank"] == (SAMPLES + 1) // 2


def test_fixed_changes_the_order_from_epoch_1_on_and_keeps_epoch_0(report):
    broken, fixed = (epoch_lines(report["variants"][v]) for v in ("broken", "fixed"))
    assert fixed[0] == broken[0]  # set_epoch(0) is the sampler's default: the same first epoch
    assert all(fixed[e][2] == 0 for e in range(1, EPOCHS))
    assert report["variants"]["fixed"]["metrics"]["min_samples_seen_by_a_rank"] > \
        report["variants"]["broken"]["metrics"]["min_samples_seen_by_a_rank"] + 20


@pytest.mark.parametrize("variant", ["broken", "fixed"])
def test_oracle_both_ranks_cover_the_dataset_every_epoch_with_the_padding(report, variant):
    # 101 samples on 2 ranks: 51 each, 102 indices, 101 distinct; the padding duplicate
    # (the epoch's first index, appended) is the one sample both ranks get.
    for total, distinct, shared in (line[3:] for line in epoch_lines(report["variants"][variant]).values()):
        assert (total, distinct, shared) == (SAMPLES + 1, SAMPLES, 1)


def test_the_two_drop_lasts_lose_different_amounts(report):
    figures = report["variants"]["measure_drop_last"]["metrics"]
    # DistributedSampler(drop_last=True): floor(101 / 2) per rank, no padding.
    assert figures["sampler_drop_last_samples_per_rank"] == SAMPLES // 2
    # DataLoader(drop_last=True): each rank drops its incomplete last batch of 8 from its 51.
    assert figures["loader_drop_last_samples_per_rank"] == (SAMPLES + 1) // 2 // 8 * 8
    assert figures["loader_drop_last_unseen_per_epoch"] > figures["sampler_drop_last_unseen_per_epoch"]
    # A different sample is left out each epoch, because set_epoch changes the order.
    assert figures["sampler_drop_last_unseen_in_run"] == 0


def _one_rank_fails(rank):
    if rank == 1:
        raise ValueError("rank 1 fails before the collective")
    dist.barrier()  # rank 0 would wait here for rank 1


def test_a_rank_that_fails_takes_the_other_down_within_seconds(tmp_path, monkeypatch):
    two_ranks = load_scenario_module(FOLDER, "_two_ranks")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where torch writes a rank's traceback
    before = {child.pid for child in psutil.Process().children(recursive=True)}
    started = time.monotonic()
    # Whichever failure join() sees first: rank 1's own, or gloo's in rank 0, whose barrier
    # ends as soon as its peer's connection goes (closed, or reset while gloo reads from it).
    with pytest.raises(ProcessRaisedException,
                       match=r"rank 1 fails before the collective|Connection (closed|reset) by peer"):
        two_ranks.run_two_ranks(_one_rank_fails)
    assert time.monotonic() - started < 10
    assert [c.pid for c in psutil.Process().children(recursive=True) if c.pid not in before] == []
    assert list(tmp_path.glob("pytorch-errorfile-*")) == []


def test_without_gloo_the_script_says_it_cannot_run_here(monkeypatch, capsys):
    two_ranks = load_scenario_module(FOLDER, "_two_ranks")
    monkeypatch.setattr(dist, "is_gloo_available", lambda: False)
    with pytest.raises(SystemExit) as ended:
        two_ranks.run_two_ranks(_one_rank_fails)
    assert ended.value.code == 3
    assert "cannot run here: this torch build has no gloo backend" in capsys.readouterr().err


def test_ranks_overlap_when_their_epochs_differ():
    # The README's myth check: a split is only disjoint when every rank draws the same permutation.
    from torch.utils.data import DistributedSampler
    ranks = [DistributedSampler(range(SAMPLES), num_replicas=2, rank=r) for r in (0, 1)]
    assert len(set(ranks[0]) & set(ranks[1])) == 1  # same epoch: only the padding duplicate
    ranks[1].set_epoch(1)                             # one rank a epoch ahead
    assert len(set(ranks[0]) & set(ranks[1])) > 10
