"""Scenario 39: what the runs show beyond their declarations (tests/test_scenarios.py checks those):
without set_epoch the streamed dataset's shuffle gives epoch 0's order again every epoch, with
persistent workers and with fresh ones, and datasets says nothing; with it every epoch is new, and
the persistent workers' order is the fresh workers' order (datasets 5.2.0 keeps the epoch in shared
memory).  datasets' and webdataset's own behaviour behind it, checked in this process; and the
doctor and explain name 39 from the loader, the run and its output."""
import re
import sys
import tempfile

import pytest
import torch
from conftest import load_scenario_module, scenario_report
from torch.utils.data import DataLoader

FOLDER = "39_stream_epoch_never_set"
EPOCHS, SAMPLES = 4, 192
FIRST_IDS = re.compile(r"^(persistent|fresh) workers, epoch (\d): first ids (\[[\d, ]+\])\.\.\.$", re.M)


@pytest.fixture(scope="module")
def report():
    return scenario_report("39")


def first_ids(run) -> dict[tuple[str, int], str]:
    return {(setting, int(epoch)): ids for setting, epoch, ids in FIRST_IDS.findall(run["output_tail"])}


def test_broken_repeats_epoch_0_with_both_worker_settings_and_datasets_says_nothing(report):
    broken = report["variants"]["broken"]
    ids = first_ids(broken)
    assert len(ids) == 2 * EPOCHS
    assert len(set(ids.values())) == 1  # one order: every epoch, persistent or fresh
    assert not re.search(r"Warning|Traceback|datasets/", broken["output_tail"])


def test_fixed_keeps_epoch_0_and_draws_a_new_order_from_epoch_1_on(report):
    broken, fixed = (first_ids(report["variants"][v]) for v in ("broken", "fixed"))
    for setting in ("persistent", "fresh"):
        assert fixed[(setting, 0)] == broken[(setting, 0)]  # epoch 0 is the default: the same first epoch
        assert len({fixed[(setting, e)] for e in range(EPOCHS)}) == EPOCHS


def test_persistent_workers_hear_the_epoch_as_fresh_ones_do(report):
    # The oracle: fresh workers copy the dataset after each set_epoch; persistent ones read the same
    # shared-memory epoch, so the two loaders deliver the same orders, epoch by epoch.
    fixed = first_ids(report["variants"]["fixed"])
    assert all(fixed[("persistent", e)] == fixed[("fresh", e)] for e in range(EPOCHS))


# ---------------------------------------------------------------- the libraries' own behaviour

def _stream():
    helper = load_scenario_module(FOLDER, "_epoch_orders")
    return helper.corpus(4, 48).shuffle(seed=42, buffer_size=64)


def test_datasets_keeps_the_epoch_in_shared_memory_and_a_map_starts_its_own():
    stream = _stream()
    derived = stream.map(lambda record: record)
    stream.set_epoch(3)
    assert isinstance(stream._epoch, torch.Tensor) and stream._epoch.is_shared()
    assert (stream.epoch, derived.epoch) == (3, 0)  # set_epoch reaches only the object it is called on


def test_without_workers_the_order_repeats_too_and_set_epoch_changes_it():
    # In the training process alone, as in the workers: the shuffle is seeded by (seed, epoch) only.
    stream = _stream()
    orders = [[r["id"] for r in stream] for _ in range(2)]
    assert orders[0] == orders[1] and sorted(orders[0]) == list(range(SAMPLES))
    stream.set_epoch(1)
    assert [r["id"] for r in stream] != orders[0]


def test_webdataset_detshuffle_counts_in_the_process_that_iterates():
    wds = pytest.importorskip("webdataset")
    stage = wds.detshuffle(8, seed=42)
    items = list(range(20))
    first, second = list(stage.run(iter(items))), list(stage.run(iter(items)))
    assert first != second and stage.epoch == 1  # each run counts one epoch, here: a worker's copy


def test_webdataset_seeded_shuffle_draws_the_same_order_every_iteration():
    wds = pytest.importorskip("webdataset")
    stage = wds.shuffle(8, seed=42)
    assert list(stage(iter(range(20)))) == list(stage(iter(range(20))))


def test_the_measured_streams(report):
    figures = report["variants"]["measure_other_streams"]["metrics"]
    assert figures["derived_fresh_repeats"] == figures["derived_persistent_repeats"] == EPOCHS - 1
    assert (figures["own_class_persistent_repeats"], figures["own_class_fresh_repeats"]) == (EPOCHS - 1, 0)
    assert (figures["wds_detshuffle_persistent_repeats"], figures["wds_detshuffle_fresh_repeats"]) == (0, EPOCHS - 1)


# ---------------------------------------------------------------- the doctor and explain

def _check():
    from scenarios.clinic.doctor.checks import s39_stream_epoch_never_set
    return s39_stream_epoch_never_set


class _Examined:
    def __init__(self, loader):
        self.loader, self.workers = loader, loader.num_workers


def test_the_doctor_reads_a_shuffled_stream_as_a_note_with_its_epoch():
    loader = DataLoader(_stream(), batch_size=16, num_workers=2)
    [finding] = _check().static(_Examined(loader))
    assert (finding.scenario, finding.level, finding.check) == ("39", "note", "stream-set-epoch")
    assert "buffer 64" in finding.evidence and "now 0" in finding.evidence


def test_the_doctor_reads_webdataset_pipelines_that_cannot_change_order():
    wds = pytest.importorskip("webdataset")
    with tempfile.TemporaryDirectory() as folder:
        with wds.TarWriter(f"{folder}/a.tar") as tar:
            tar.write({"__key__": "0", "id.txt": "0"})
        urls = [f"{folder}/a.tar"]
        seeded = wds.WebDataset(urls, shardshuffle=4, seed=1).shuffle(8, seed=1)
        counted = wds.WebDataset(urls, shardshuffle=4, detshuffle=True, seed=1).compose(wds.detshuffle(8, seed=1))
        clock = wds.WebDataset(urls, shardshuffle=4, seed=1).shuffle(8)

        def levels(dataset, persistent):
            loader = DataLoader(dataset, num_workers=2, persistent_workers=persistent)
            return [f.level for f in _check().static(_Examined(loader))]

        assert levels(seeded, True) == levels(seeded, False) == ["risk"]
        assert (levels(counted, True), levels(counted, False)) == ([], ["risk"])
        assert levels(clock, False) == ["note"]  # the shards' order repeats; the buffer's follows the clock


def _row(epoch, order, **extra):
    return {"pid": 1, "lid": 1, "epoch": epoch, "rank": None, "iterable": True, "stream_shuffles": True, "workers": 2,
            "ended": True, "order": order, "samples": SAMPLES, "distinct": SAMPLES, **extra}


def test_the_doctor_names_a_repeated_stream_order_in_the_run_and_nothing_else():
    check = _check()
    [finding] = check.observed({"per_epoch": [_row(1, "a"), _row(2, "a"), _row(3, "a")]})
    assert finding.level == "risk" and finding.figures["epochs_repeated"] == 2
    assert check.observed({"per_epoch": [_row(e, str(e)) for e in (1, 2, 3)]}) == []
    # a map-style loader is 15's to judge; an epoch cut short proves nothing
    assert check.observed({"per_epoch": [_row(e, "a", iterable=False) for e in (1, 2)]}) == []
    assert check.observed({"per_epoch": [_row(1, "a"), _row(2, "a", ended=False)]}) == []
    # a stream that does not shuffle (or does not say) repeats its order by design: a plain IterableDataset
    for says in (False, None):
        assert check.observed({"per_epoch": [_row(e, "a", stream_shuffles=says) for e in (1, 2)]}) == []
    # ... unless it holds an epoch of its own (a hand-written stream shuffling from seed + epoch): the same epoch in
    # the training process and the same order is the shuffle that never heard it; an epoch advanced is judged not
    quiet = {"stream_shuffles": None}
    [held] = check.observed({"per_epoch": [_row(e, "a", **quiet, stream_epoch=0) for e in (1, 2, 3)]})
    assert held.level == "risk" and "own epoch stayed 0" in held.evidence
    assert check.observed({"per_epoch": [_row(e, "a", **quiet, stream_epoch=e) for e in (1, 2)]}) == []


def test_explain_names_39_on_brokens_output_and_nothing_on_fixeds(report):
    from scenarios.clinic.doctor.explain import explain_text
    named = explain_text(report["variants"]["broken"]["output_tail"])
    assert [(f.scenario, f.level) for f in named] == [("39", "possible")]
    assert explain_text(report["variants"]["fixed"]["output_tail"]) == []
    streamed = "load_dataset('c4', streaming=True)\n" + report["variants"]["broken"]["output_tail"]
    assert [(f.scenario, f.level) for f in explain_text(streamed)] == [("39", "likely")]


@pytest.mark.full
def test_the_watched_run_of_broken_is_named_39_and_fixed_is_not(monkeypatch):
    from scenarios.clinic.doctor.checks import s39_stream_epoch_never_set as check
    from scenarios.clinic.doctor.watched_run import watch
    from scenarios.clinic.run.declarations import REPO_ROOT
    folder = REPO_ROOT / "scenarios" / FOLDER
    monkeypatch.chdir(folder)
    for script, expected in (("broken.py", ["risk"]), ("fixed.py", [])):
        run = watch([sys.executable, script], seconds=60, echo=lambda line: None)
        assert not run["stopped"] and [f.level for f in check.observed(run)] == expected
