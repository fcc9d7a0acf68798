"""Scenario 37: what the runs show beyond their declarations (tests/test_scenarios.py checks those):
under the Trainer's default use_distributed_sampler=True the two ranks get the sampler's indices
shuffled apart, batch by batch exactly as Lightning's DistributedSamplerWrapper(shuffle=True) deals
them, with no word from Lightning; with the sampler splitting itself, every batch is whole.  Lightning
2.6.6's rule behind it, checked in this process; the texts `explain` names 37 for; the doctor's
reading of a run."""
import re
import sys

import pytest
from conftest import REPO_ROOT, load_scenario_module, scenario_report

from scenarios.clinic.doctor.checks import s37_framework_replaces_sampler as check
from scenarios.clinic.doctor.explain import explain_text

FOLDER = "37_framework_replaces_sampler"
BATCH, HALF = 8, 4
RANK_LINE = re.compile(r"^rank (\d): rare samples per batch \[([\d, ]+)\]$", re.M)
pytest.importorskip("lightning")


@pytest.fixture(scope="module")
def report():
    return scenario_report("37")


@pytest.fixture(scope="module")
def broken():
    return load_scenario_module(FOLDER, "broken")


def per_rank(run) -> dict[int, list[int]]:
    return {int(rank): [int(c) for c in counts.split(", ")] for rank, counts in RANK_LINE.findall(run["output_tail"])}


def lightnings_batches(broken, rank: int) -> list[int]:
    """The rare count per batch that Lightning's own wrapper deals this rank, as the Trainer builds it."""
    from lightning.pytorch.trainer.connectors.data_connector import _get_distributed_sampler
    from torch.utils.data import DataLoader

    labels = [int(i < broken.RARE) for i in range(broken.SAMPLES)]
    loader = DataLoader(broken.Scans(), sampler=broken.BalancedBatches(labels, BATCH), batch_size=BATCH)
    indices = list(_get_distributed_sampler(loader, shuffle=True, overfit_batches=0, num_replicas=2, rank=rank))
    return [sum(i < broken.RARE for i in indices[s:s + BATCH]) for s in range(0, len(indices), BATCH)]


def test_broken_ranks_get_the_batches_lightnings_shuffled_wrapper_deals_and_nothing_is_said(report, broken):
    run = report["variants"]["broken"]
    counts = per_rank(run)
    assert counts == {0: lightnings_batches(broken, 0), 1: lightnings_batches(broken, 1)}
    assert sum(counts[0] + counts[1]) == HALF * 28  # every rare draw arrived: the mix, not the share, is lost
    # Lightning's only warnings are its own deprecation notices (pytree) and its litlogger tip.
    warned = [line for line in run["output_tail"].splitlines() if "Warning" in line or "warn" in line.lower()]
    assert not [line for line in warned if re.search(r"sampler|shuffl", line, re.I)]
    assert not re.search(r"DistributedSamplerWrapper|use_distributed_sampler", run["output_tail"])


def test_fixed_ranks_get_whole_batches_of_the_sampler_in_its_order(report, broken):
    counts = per_rank(report["variants"]["fixed"])
    assert counts == {0: [HALF] * 14, 1: [HALF] * 14}
    assert "Traceback" not in report["variants"]["fixed"]["output_tail"]


def test_fixed_sampler_splits_by_whole_batch_with_no_index_on_both_ranks():
    fixed = load_scenario_module(FOLDER, "fixed")
    labels = [int(i < fixed.RARE) for i in range(fixed.SAMPLES)]
    alone = list(fixed.BalancedBatches(labels, BATCH))
    ranks = [list(fixed.BalancedBatches(labels, BATCH, rank=r, world=2)) for r in (0, 1)]
    assert [len(r) for r in ranks] == [len(s) for s in (fixed.BalancedBatches(labels, BATCH, rank=r, world=2)
                                                        for r in (0, 1))] == [112, 112]
    batches = [alone[s:s + BATCH] for s in range(0, len(alone), BATCH)]
    assert [r[s:s + BATCH] for r in ranks for s in range(0, 112, BATCH)] == batches[0::2] + batches[1::2]
    common = [i for r in ranks for i in r if i >= fixed.RARE]
    assert sorted(common) == list(range(fixed.RARE, fixed.SAMPLES))  # each common sample once, on one rank


def test_which_samplers_lightning_replaces_and_how(broken):
    """lightning/pytorch/trainer/connectors/data_connector.py, _get_distributed_sampler: a RandomSampler or
    SequentialSampler (or a subclass) becomes a DistributedSampler over the dataset, any other sampler is
    wrapped, with the shuffle the Trainer passes (True for training); Fabric passes False for a custom one."""
    from lightning.fabric import Fabric
    from lightning.fabric.utilities.distributed import DistributedSamplerWrapper
    from lightning.pytorch.trainer.connectors.data_connector import _get_distributed_sampler
    from torch.utils.data import DataLoader, DistributedSampler, RandomSampler, WeightedRandomSampler

    class Subclass(RandomSampler):
        pass

    def made(sampler, **kwargs):
        loader = DataLoader(broken.Scans(), sampler=sampler, batch_size=BATCH)
        return _get_distributed_sampler(loader, num_replicas=2, rank=0, **kwargs)

    labels = [int(i < broken.RARE) for i in range(broken.SAMPLES)]
    for sampler in (broken.BalancedBatches(labels, BATCH), WeightedRandomSampler([1.0] * broken.SAMPLES, 64)):
        wrapper = made(sampler, shuffle=True, overfit_batches=0)
        assert type(wrapper) is DistributedSamplerWrapper and wrapper.shuffle and wrapper.dataset._sampler is sampler
    replaced = made(Subclass(broken.Scans()), shuffle=True, overfit_batches=0)
    assert type(replaced) is DistributedSampler  # the subclass's own __iter__ is gone
    loader = DataLoader(broken.Scans(), sampler=broken.BalancedBatches(labels, BATCH), batch_size=BATCH)
    assert not Fabric._get_distributed_sampler(loader, num_replicas=2, rank=0).shuffle


def test_the_sampler_cannot_be_wrapped_texts_are_lightnings_own_and_name_37():
    from lightning.fabric.utilities.distributed import DistributedSamplerWrapper
    from torch.utils.data import Sampler

    class NoLength(Sampler):
        def __iter__(self):
            return iter(range(4))

    with pytest.raises(TypeError) as raised:
        DistributedSamplerWrapper(NoLength(), num_replicas=2, rank=0)
    text = f"TypeError: {raised.value}\n"
    assert [(f.scenario, f.check, f.level) for f in explain_text(text)] == \
        [("37", "sampler-cannot-be-wrapped", "certain")]


def _run(loaders: list[dict], batches: int = 14) -> dict:
    return {"loaders": loaders, "per_epoch": [{"pid": loader["pid"], "lid": loader["lid"], "epoch": 1,
                                               "rank": loader.get("rank"), "batches": batches}
                                              for loader in loaders if loader["sampler"] != "BalancedBatches"]}


def _rank_loaders(inner: str, wrapper: str = "DistributedSamplerWrapper", shuffle=True) -> list[dict]:
    return [loader for rank, pid in ((0, 100), (1, 200)) for loader in (
        {"pid": pid, "lid": 1, "rank": rank, "sampler": inner, "shuffle": None},
        {"pid": pid, "lid": 2, "rank": rank, "sampler": wrapper, "shuffle": shuffle})]


def test_the_observed_rule_names_the_wrapped_sampler_and_leaves_order_free_ones_and_fabric_alone():
    (found,) = check.observed(_run(_rank_loaders("BalancedBatches")))
    assert (found.level, found.check, found.figures) == ("risk", "sampler-wrapped-and-shuffled",
                                                         {"rank": 0, "wrapped": "BalancedBatches"})
    assert check.observed(_run(_rank_loaders("WeightedRandomSampler"))) == []   # its order carries nothing
    assert check.observed(_run(_rank_loaders("BalancedBatches", shuffle=False))) == []  # Fabric's wrapper
    assert check.observed(_run(_rank_loaders("BalancedBatches", wrapper="DistributedSampler"))) == []
    assert check.observed(_run(_rank_loaders("BalancedBatches"), batches=0)) == []  # built, never read
    fixed = [loader for loader in _rank_loaders("BalancedBatches") if loader["lid"] == 1]
    assert check.observed({"loaders": fixed, "per_epoch": [{"pid": 100, "lid": 1, "batches": 14}]}) == []


def test_the_library_wrappers_measured_side_by_side(report):
    figures = report["variants"]["measure_library_wrappers"]["metrics"]
    broken = report["variants"]["broken"]["metrics"]
    assert figures["trainer_balanced_batches"] == broken["balanced_batches"]  # the DDP run is the wrapper's deal
    assert figures["fabric_balanced_batches"] == figures["accelerate_balanced_batches"] == 28
    assert figures["accelerate_split_batches_balanced_batches"] == 0


@pytest.mark.full  # a third Lightning DDP job, watched (two interpreters importing Lightning: about a minute)
def test_the_doctor_names_37_in_the_broken_run_and_nothing_in_the_fixed_one():
    from scenarios.clinic.doctor.watched_run import watch

    for variant, expected in (("broken", ["sampler-wrapped-and-shuffled"]), ("fixed", [])):
        run = watch([sys.executable, str(REPO_ROOT / "scenarios" / FOLDER / f"{variant}.py")], seconds=150,
                    echo=lambda line: None)
        assert [f.check for f in check.observed(run)] == expected, variant
