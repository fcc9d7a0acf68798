"""Scenario 24: what the runs show beyond their declarations (tests/test_scenarios.py checks those):
the job really dies (SIGKILL to the training process and its workers) and a fresh process resumes;
with a plain DataLoader the resumed epoch has samples twice and as many never, with no message
from PyTorch; with the StatefulDataLoader every sample once per epoch and the lost steps replayed;
the seed myth replays epoch 0; the skip myth holds only in epoch 0; and run_job is bounded."""
import importlib
import re
import tempfile
import time

import psutil
import pytest

from conftest import REPO_ROOT, scenario_report

FOLDER = "24_resume_mid_epoch"
SAMPLES, EPOCHS = 96, 2
COUNTS = re.compile(r"^epoch (\d) counts per sample: ([\d ]+)$", re.M)
KILLED = re.compile(r"^attempt 1: trained steps 1-(\d+), checkpoint at step (\d+), "
                    r"then SIGKILL to its (\d+) processes", re.M)


@pytest.fixture(scope="module")
def report():
    return scenario_report("24")


def counts(run):
    """epoch -> how many times the job's model trained on each sample, from the run's output."""
    return {int(e): [int(c) for c in line.split()] for e, line in COUNTS.findall(run["output_tail"])}


@pytest.mark.parametrize("variant", ["broken", "fixed", "myth_sampler_seed"])
def test_the_job_really_dies_with_its_workers_and_resumes_from_its_checkpoint(report, variant):
    run = report["variants"][variant]
    trained, saved, killed = map(int, KILLED.search(run["output_tail"]).groups())
    assert trained > saved == run["metrics"]["resumed_at_step"]  # the steps after it are lost
    assert killed == 3  # the training process and its 2 DataLoader workers
    assert run["metrics"]["lost_steps"] == trained - saved


def test_broken_trains_on_as_many_samples_twice_as_never_and_pytorch_says_nothing(report):
    run = report["variants"]["broken"]
    per_epoch = counts(run)
    assert sorted(per_epoch) == list(range(EPOCHS))
    assert per_epoch[0] == [1] * SAMPLES  # the epoch before the interruption is whole
    epoch_1 = per_epoch[1]
    assert sum(epoch_1) == SAMPLES  # as many steps as an epoch: every duplicate pushed a sample out
    assert epoch_1.count(0) == sum(c - 1 for c in epoch_1 if c > 1) == run["metrics"]["samples_never_seen"]
    assert not re.search(r"Warning|Traceback|torch/", run["output_tail"])


def test_fixed_trains_on_every_sample_once_and_replays_the_lost_steps(report):
    run = report["variants"]["fixed"]
    assert counts(run) == {e: [1] * SAMPLES for e in range(EPOCHS)}
    lost = int(run["metrics"]["lost_steps"])
    assert f"{lost} of {lost} steps had the same batch" in run["output_tail"]
    # torchdata's only words: a deprecation warning of torch.set_vital, which torchdata 0.11 calls.
    assert "Traceback" not in run["output_tail"]


def test_the_saved_seed_brings_back_epoch_0s_order_not_epoch_1s(report):
    figures = report["variants"]["myth_sampler_seed"]["metrics"]
    assert figures["resumed_steps_replaying_epoch_0"] == figures["steps_trained"] - figures["resumed_at_step"]
    assert figures["samples_seen_twice"] == figures["samples_never_seen"] >= 1


def test_skipping_steps_holds_in_the_first_epoch_only_and_loads_what_it_skips(report):
    figures = report["variants"]["myth_skip_steps"]["metrics"]
    assert figures["killed_in_epoch_0_epochs_exactly_once"] == EPOCHS
    assert figures["killed_in_epoch_1_epochs_exactly_once"] == EPOCHS - 1
    cost = report["variants"]["measure_fast_forward"]["metrics"]
    # Resumed at step 9 of 12: the skip loads all 96 samples, the StatefulDataLoader the 24 it trains on.
    assert cost["skip_samples_loaded"] - cost["stateful_samples_loaded"] == 9 * 8


def _job_module(monkeypatch):
    # Imported by its own name: the attempts are spawned, and a fresh interpreter imports it again.
    monkeypatch.syspath_prepend(str(REPO_ROOT / "scenarios" / FOLDER))
    return importlib.import_module("_job")


def _steps_forever(job):
    """A training loop that never ends by itself, with 2 forked DataLoader workers."""
    from torch.utils.data import DataLoader
    state = job.resume() or {"trained_on": []}
    loader = DataLoader(range(10_000), batch_size=8, num_workers=2, multiprocessing_context="fork")
    for batch in loader:
        job.train_step(state, batch)
        if len(state["trained_on"]) % 2 == 0:
            job.save(state)


@pytest.mark.full  # the runner's limit killing a whole tree is shown in test_runner.py
def test_a_resumed_attempt_that_never_ends_is_killed_with_its_workers_and_nothing_is_left(tmp_path, monkeypatch):
    job = _job_module(monkeypatch)
    monkeypatch.setattr(job, "ATTEMPT_LIMIT_S", 8)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the checkpoints go
    workers, kill_group = [], job._kill_group

    def recording(attempt):  # the processes below each attempt when it was killed: its workers
        below = kill_group(attempt)
        workers.extend(below)
        return below

    monkeypatch.setattr(job, "_kill_group", recording)
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="did not finish in 8 s"):
        job.run_job(_steps_forever, kill_after_step=3)
    assert time.monotonic() - started < 45
    # Spawning starts multiprocessing's resource tracker once per process; it stays, as it should.
    left = [p for p in psutil.Process().children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE
            and "multiprocessing.resource_tracker" not in " ".join(p.cmdline())]
    assert left == []
    assert len(workers) == 4  # both attempts were killed with their 2 workers each
    for worker in workers:  # orphans once their attempt died: gone, or a zombie for init to reap
        assert not worker.is_running() or worker.status() == psutil.STATUS_ZOMBIE
    assert list(tmp_path.iterdir()) == []  # the checkpoint folder is removed


def test_without_process_groups_the_script_says_it_cannot_run_here(monkeypatch, capsys):
    job = _job_module(monkeypatch)
    monkeypatch.delattr(job.os, "killpg")
    with pytest.raises(SystemExit) as ended:
        job.run_job(_steps_forever, kill_after_step=3)
    assert ended.value.code == 3
    assert "cannot run here: the job's interruption needs POSIX process groups" in capsys.readouterr().err
