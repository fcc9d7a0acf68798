"""Scenario 36: what the runs show beyond their declarations (tests/test_scenarios.py checks those): the
resumed-once job is exact and the resumed-twice job skips, with torchdata's warning counting 6 and then 15;
fixed.py's stream is never fast-forwarded; the hand-rolled skip repeats instead.  torchdata 0.11.0's own
behaviour behind it, checked in this process with a small stream: the fast-forwarded batches are counted
again on top of the loaded count, with workers and without; a stream with a state of its own is not
fast-forwarded; and `explain` names 36 for the warning (possible) and for the bare StopIteration (certain)."""
import re
import warnings

import pytest
import torch
from conftest import scenario_report
from torch.utils.data import IterableDataset, get_worker_info

from scenarios.clinic.doctor.explain import explain_text

torchdata = pytest.importorskip("torchdata.stateful_dataloader")
RANK_LINE = re.compile(r"^rank (\d): (resumed once|resumed twice): (\d) runs, resumed at (.*); trained (\d+) steps: "
                       r"(\d+) of 96 samples twice or more, (\d+) never; (\d+) steps unlike", re.M)
FAST_FORWARD = re.compile(r"naively fast-forwarding your dataset by (\d+) steps")


@pytest.fixture(scope="module")
def report():
    return scenario_report("36")


def jobs(run):
    return {(int(r), name): (int(runs), resumed, int(steps), int(twice), int(never), int(unlike))
            for r, name, runs, resumed, steps, twice, never, unlike in RANK_LINE.findall(run["output_tail"])}


def test_broken_resumed_once_is_exact_and_resumed_twice_skips_6_batches_per_rank(report):
    seen = jobs(report["variants"]["broken"])
    for rank in (0, 1):
        assert seen[(rank, "resumed once")] == (2, "step 6 (its loader state: step 6)", 24, 0, 0, 0)
        assert seen[(rank, "resumed twice")] == (
            3, "step 6 (its loader state: step 6), step 9 (its loader state: step 15)", 18, 0, 24, 15)


def test_broken_torchdata_warns_6_at_each_first_resume_and_15_at_the_second(report):
    counts = sorted(int(n) for n in FAST_FORWARD.findall(report["variants"]["broken"]["output_tail"]))
    assert counts == [6, 6, 6, 6, 15, 15]  # 2 ranks: the resumed-once job's resume, the resumed-twice job's two
    tail = report["variants"]["broken"]["output_tail"]
    assert "ChildFailedError" in tail and "StopIteration" not in tail  # torchrun's report of rank 0's exit 1


def test_fixed_is_never_fast_forwarded_and_every_job_runs_as_the_continuous_one(report):
    run = report["variants"]["fixed"]
    assert not FAST_FORWARD.search(run["output_tail"])
    seen = jobs(run)
    for rank in (0, 1):
        assert seen[(rank, "resumed twice")] == (
            3, "step 6 (its loader state: step 6), step 9 (its loader state: step 9)", 24, 0, 0, 0)


def test_the_hand_rolled_skip_repeats_6_batches_without_a_word(report):
    run = report["variants"]["broken_single_shot_skip"]
    assert not FAST_FORWARD.search(run["output_tail"])
    assert jobs(run)[(0, "resumed twice")] == (
        3, "step 6 (its loader state: step 6), step 9 (its loader state: step 3)", 30, 24, 0, 21)


def test_the_other_endings_are_torchdatas_own_errors_and_explain_names_36(report):
    tail = report["variants"]["measure_endings"]["output_tail"]
    printed = [line for line in tail[tail.index("Traceback"):tail.index("metric ")].splitlines()
               if not FAST_FORWARD.search(line)]  # torchdata's warnings, on stderr, land between the lines
    tracebacks = "\n".join(printed).split("Traceback")[1:]
    assert [t.rstrip().splitlines()[-1] for t in tracebacks] == [
        "StopIteration", "ValueError: last_yielded_worker_id does not match, the dataset may have changed"]
    for traceback in tracebacks:
        assert re.search(r"stateful_dataloader\.py\", line \d+, in __iter__", traceback)
    named = [[(f.scenario, f.check, f.level) for f in explain_text("Traceback" + t)] for t in tracebacks]
    assert named == [[("36", "fast-forward-past-end", "certain")], [("36", "fast-forward-other-worker", "possible")]]


STREAM, BATCH = 48, 4


class _Stream(IterableDataset):
    def __iter__(self):
        worker = get_worker_info()
        first, step = (worker.id, worker.num_workers) if worker else (0, 1)
        yield from range(STREAM)[first::step]


class _StreamWithState(_Stream):
    def __init__(self):
        self.position = 0

    def state_dict(self):
        return {"position": self.position}

    def load_state_dict(self, state):
        self.position = state["position"]

    def __iter__(self):
        for index in list(super().__iter__())[self.position:]:
            self.position += 1
            yield index


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="'set_vital' is deprecated")
        yield


def _loader(dataset, workers):
    return torchdata.StatefulDataLoader(dataset, BATCH, num_workers=workers,
                                        multiprocessing_context="fork" if workers else None)


def _resume(dataset_class, workers, state, batches):
    loader = _loader(dataset_class(), workers)
    loader.load_state_dict(state)
    it = iter(loader)
    got = [next(it).tolist() for _ in range(batches)]
    return loader.state_dict(), got


def _count(state):
    return state["_snapshot"]["_snapshot_step"] if "_snapshot" in state else state["_num_yielded"]


def _continuous(dataset_class, workers):
    return [b.tolist() for b in _loader(dataset_class(), workers)]


def _stopped(dataset_class, workers, steps):
    """A loader read for `steps` batches and dropped, as a job killed there: its batches and state_dict()."""
    loader = _loader(dataset_class(), workers)
    it = iter(loader)
    first = [next(it).tolist() for _ in range(steps)]
    state = loader.state_dict()
    del it, loader
    return first, state


@pytest.mark.parametrize("workers", [0, 2])
def test_torchdata_counts_the_fast_forwarded_batches_again(workers, caplog):
    continuous = _continuous(_Stream, workers)
    first, state = _stopped(_Stream, workers, 4)
    assert first == continuous[:4] and _count(state) == 4
    after_one, got = _resume(_Stream, workers, state, 2)
    assert got == continuous[4:6]  # the first resume is exact
    assert _count(after_one) == 4 + 4 + 2  # but the 4 fast-forwarded batches are counted a second time
    _, skipped = _resume(_Stream, workers, after_one, 1)
    assert skipped == continuous[10:11]  # the second resume goes on at batch 11, not 7
    assert [int(n) for n in FAST_FORWARD.findall(caplog.text)] == [4, 10]


def test_an_odd_surplus_with_2_workers_is_refused_as_a_changed_dataset():
    _, state = _stopped(_Stream, 2, 3)
    after_one, _ = _resume(_Stream, 2, state, 2)  # the state says 8 where 5 were read: 3 more, odd
    with pytest.raises(ValueError, match="last_yielded_worker_id does not match, the dataset may have changed"):
        _resume(_Stream, 2, after_one, 1)


@pytest.mark.parametrize("workers", [0, 2])
def test_a_stream_with_its_own_state_is_not_fast_forwarded(workers, caplog):
    continuous = _continuous(_StreamWithState, workers)
    first, state = _stopped(_StreamWithState, workers, 3)
    after_one, got = _resume(_StreamWithState, workers, state, 2)
    assert _count(after_one) == 5
    _, rest = _resume(_StreamWithState, workers, after_one, len(continuous) - 5)
    assert first + got + rest == continuous
    assert not FAST_FORWARD.search(caplog.text)


def test_explain_asks_about_the_warning_alone():
    text = ("Neither dataset nor iter(dataset) defines state_dict/load_state_dict so we are naively fast-forwarding "
            "your dataset by 15 steps. For more efficient resumes, please implement `state_dict` and "
            "`load_state_dict` in your IterableDataset and/or iterator.\n")
    found = explain_text(text)
    assert [(f.scenario, f.check, f.level) for f in found] == [("36", "stream-fast-forward", "possible")]
    assert "a second time" in found[0].evidence


def test_a_bare_stop_iteration_elsewhere_names_nothing():
    text = 'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n    next(it)\nStopIteration\n'
    assert explain_text(text) == []


def test_the_doctor_check_flags_a_stateful_loader_over_a_stream_without_state():
    from scenarios.clinic.doctor.checks import s36_second_resume as check
    from scenarios.clinic.doctor.setup import Examined, describe

    def examined(dataset):
        loader = _loader(dataset, 2)
        return Examined(loader, describe(loader), None)

    assert [f.check for f in check.static(examined(_Stream()))] == ["stream-without-state"]
    assert check.static(examined(_StreamWithState())) == []
    plain = torch.utils.data.DataLoader(_Stream(), BATCH, num_workers=2)
    assert check.static(Examined(plain, describe(plain), None)) == []
