"""Scenario 32: what the runs show beyond their declarations (tests/test_scenarios.py checks those):
the job really dies and a fresh process resumes; with the loader's state loaded after iter(), the
resumed epoch has samples twice and as many never, with no word from torch or torchdata; loaded
before, every sample once and the lost steps replayed.  torchdata 0.11.0's own behaviour behind it,
checked in this process: load_state_dict() leaves an iterator already taken alone, and a state of
another num_workers is refused with the texts `explain` names 32 for."""
import re
import subprocess
import sys
import traceback
import warnings

import pytest
from conftest import scenario_report

from scenarios.clinic.doctor.explain import explain_text

SAMPLES, BATCH = 96, 8
COUNTS = re.compile(r"^epoch (\d) counts per sample: ([\d ]+)$", re.M)
KILLED = re.compile(r"^attempt 1: trained steps 1-(\d+), checkpoint at step (\d+), "
                    r"then SIGKILL to its (\d+) processes", re.M)
torchdata = pytest.importorskip("torchdata.stateful_dataloader")


@pytest.fixture(scope="module")
def report():
    return scenario_report("32")


def counts(run):
    return {int(e): [int(c) for c in line.split()] for e, line in COUNTS.findall(run["output_tail"])}


@pytest.mark.parametrize("variant", ["broken", "fixed"])
def test_the_job_really_dies_with_its_workers_and_resumes_from_its_checkpoint(report, variant):
    run = report["variants"][variant]
    trained, saved, killed = map(int, KILLED.search(run["output_tail"]).groups())
    assert trained > saved == run["metrics"]["resumed_at_step"]
    assert killed == 3  # the training process and its 2 DataLoader workers
    assert "Traceback" not in run["output_tail"]


def test_broken_trains_on_as_many_samples_twice_as_never_and_nothing_is_said(report):
    run = report["variants"]["broken"]
    per_epoch = counts(run)
    assert per_epoch[0] == [1] * SAMPLES  # the epoch before the interruption is whole
    epoch_1 = per_epoch[1]
    assert sum(epoch_1) == SAMPLES
    assert epoch_1.count(0) == sum(c - 1 for c in epoch_1 if c > 1) == run["metrics"]["samples_never_seen"]
    # torchdata's one line is the deprecation warning of torch.set_vital it prints as a loader is built.
    said = [line for line in run["output_tail"].splitlines() if "Warning" in line]
    assert said and all("'set_vital' is deprecated" in line for line in said)


def test_fixed_trains_on_every_sample_once_and_replays_the_lost_steps(report):
    run = report["variants"]["fixed"]
    assert counts(run) == {0: [1] * SAMPLES, 1: [1] * SAMPLES}
    lost = int(run["metrics"]["lost_steps"])
    assert f"{lost} of {lost} steps had the same batch" in run["output_tail"]


def test_the_measured_state_and_num_workers_outcomes(report):
    figures = report["variants"]["measure_loader_state"]["metrics"]
    assert figures["late_load_state_batches"] == 3  # the loaded state, though the loop had taken 8 batches
    assert figures["asserts_errors"] == 3 and figures["python_O_errors"] == 1


def _loader(workers):
    return torchdata.StatefulDataLoader(list(range(SAMPLES)), BATCH, shuffle=True, num_workers=workers,
                                        multiprocessing_context="fork" if workers else None)


def _state_after(batches_done, workers):
    loader = _loader(workers)
    batches = iter(loader)
    done = [next(batches).tolist() for _ in range(batches_done)]
    return loader.state_dict(), done


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="'set_vital' is deprecated")
        yield


def test_load_state_dict_leaves_an_iterator_already_taken_at_its_first_batch():
    state, done = _state_after(3, workers=0)
    late, early = _loader(0), _loader(0)
    taken = iter(late)
    late.load_state_dict(state)
    early.load_state_dict(state)
    resumed = [b.tolist() for b in early]
    assert len(resumed) == SAMPLES // BATCH - 3
    assert sorted(i for b in done + resumed for i in b) == list(range(SAMPLES))  # loaded first: the epoch goes on
    assert len([b.tolist() for b in taken]) == SAMPLES // BATCH  # taken first: a whole epoch from batch 0


def _explained(text):
    return [(f.scenario, f.check) for f in explain_text(text)]


def test_a_state_of_another_num_workers_is_refused_and_explain_names_32():
    state, _ = _state_after(1, workers=2)
    for workers in (1, 0):  # torchdata 0.11.0 asserts the count, and a single-process state's keys
        loader = _loader(workers)
        loader.load_state_dict(state)
        with pytest.raises(AssertionError) as refused:
            next(iter(loader))
        assert _explained("".join(traceback.format_exception(refused.value))) == [("32", "state-other-workers")]


@pytest.mark.full  # explain on 32's KeyError is shown on the broken run; -O's form in make test-full
def test_under_python_O_the_keyerror_of_the_issues_and_explain_names_32():
    child = subprocess.run(
        [sys.executable, "-O", "-W", "ignore", "-c",
         "from torchdata.stateful_dataloader import StatefulDataLoader as L\n"
         "a = L(list(range(96)), 8, shuffle=True, num_workers=2, multiprocessing_context='fork')\n"
         "i = iter(a); next(i); s = a.state_dict(); del i, a\n"
         "b = L(list(range(96)), 8, shuffle=True, num_workers=0); b.load_state_dict(s); next(iter(b))\n"],
        capture_output=True, text=True, timeout=120)
    assert child.returncode == 1
    assert child.stderr.strip().splitlines()[-1] == "KeyError: '_sampler_iter_yielded'"
    assert _explained(child.stderr) == [("32", "state-other-workers")]
    assert _explained("KeyError: '_sampler_iter_yielded'\n") == [("32", "state-other-workers")]  # pasted alone
