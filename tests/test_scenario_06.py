"""Scenario 06: a native crash kills a worker; the diagnosis steps and the fix, as measured.

The generic checks (each variant's outcome, evidence and bounds, nothing left running) are
tests/test_scenarios.py's; here: the words users see, what is lost, and the oracle.
Every test reads a variant's whole output (the runner's `output`), not the report's tail.
"""
import re
import tempfile
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader

from conftest import REPO_ROOT, load_scenario_module, scenario_report
from scenarios.synthetic_data import GRADING_SEED

FOLDER = REPO_ROOT / "scenarios" / "06_worker_killed_by_signal"
DAMAGED_FILE = "img_00137.rec"
WORKER_SAYS = "ERROR: Unexpected segmentation fault encountered in worker."
KILLED = r"RuntimeError: DataLoader worker \(pid (\d+)\) is killed by signal: Segmentation fault\."
EXITED = r"RuntimeError: DataLoader worker \(pid\(s\) (\d+)\) exited unexpectedly"
CHAIN = "The above exception was the direct cause of the following exception:"


def _record_folders() -> set[str]:
    """Temporary folders holding this scenario's record files (a leak if any survive)."""
    return {str(p.parent) for p in Path(tempfile.gettempdir()).glob("tmp*/img_*.rec")}


RECORD_FOLDERS_BEFORE = _record_folders()  # taken at collection, before any variant runs


@pytest.fixture(scope="module")
def report():
    return scenario_report("06")


def output(report, variant: str) -> str:
    """A variant's whole output (the runner's `output`; its `output_tail` is for people)."""
    return report["variants"][variant]["output"]


def assert_death_by_signal_reported(out: str) -> None:
    """What every ending of a segfaulted worker's loss shows (README, Symptom: A, B and C)."""
    # The dying worker's own line, written by PyTorch's handler in it before it re-raises the
    # signal: the one place the signal is named in every run.
    assert WORKER_SAYS in out, out
    # The main process ends on a RuntimeError naming the worker: "is killed by signal" (B,
    # and A, which chains "exited unexpectedly" to it) or "exited unexpectedly" alone (C).
    # (The worker's line ends in a NUL byte, which starts whichever line is written next.)
    errors = [line for line in out.replace("\0", "").splitlines() if line.startswith("RuntimeError: ")]
    assert errors and (re.match(KILLED, errors[-1]) or re.match(EXITED, errors[-1])), out
    killed, exited = re.search(KILLED, out), re.search(EXITED, out)
    if killed and exited:  # A: the same worker named twice, the signal first
        assert killed.group(1) == exited.group(1)
        assert killed.start() < out.index(CHAIN) < exited.start()
    # The exit-status wording belongs to another kind of death (README, Root cause).
    assert "Details are lost" not in out


def test_broken_reports_the_death_in_pytorchs_own_words(report):
    assert_death_by_signal_reported(output(report, "broken"))


def test_broken_loses_the_workers_traceback_and_the_epoch(report):
    broken = report["variants"]["broken"]
    out = output(report, "broken")
    assert " in decode" not in out and "string_at" not in out and DAMAGED_FILE not in out
    # The damaged file sits in the ninth batch of 16: at most the eight before it arrive.
    assert broken["metrics"]["samples_read"] <= 128
    assert "pixel_sum" not in broken["metrics"]  # the loop never finished


def test_fixed_skips_the_damaged_file_and_reads_the_rest(report):
    out = output(report, "fixed")
    assert re.search(rf"skipped {DAMAGED_FILE}: header puts 1024 bytes at offset 4503599627370512", out)
    assert out.count("skipped ") == 1
    assert "exited unexpectedly" not in out and "segmentation fault" not in out.lower()


def test_fixed_pixel_sum_matches_a_single_process_oracle(report):
    fixed = load_scenario_module(FOLDER.name, "fixed")
    records = load_scenario_module(FOLDER.name, "_record_files")
    with tempfile.TemporaryDirectory() as folder:
        records.write_record_files(folder, fixed.FILES)
        dataset = fixed.RecordDataset(folder)
        expected = sum(int(images.sum()) for images in DataLoader(dataset, batch_size=16))
    assert report["variants"]["fixed"]["metrics"]["pixel_sum"] == expected > 0


def test_oracle_fixed_loader_with_workers_yields_what_num_workers_0_yields(tmp_path):
    fixed = load_scenario_module(FOLDER.name, "fixed")
    records = load_scenario_module(FOLDER.name, "_record_files")
    paths = records.write_record_files(tmp_path, fixed.FILES)
    records.damage(paths[5])
    records.damage(paths[40])
    dataset = fixed.RecordDataset(tmp_path)
    assert len(dataset) == fixed.FILES - 3
    alone = list(DataLoader(dataset, batch_size=8))
    with_workers = list(DataLoader(dataset, batch_size=8, num_workers=2,
                                   multiprocessing_context="fork"))
    assert len(alone) == len(with_workers) == 32
    assert all(torch.equal(a, b) for a, b in zip(alone, with_workers))


def test_faulthandler_in_workers_shows_the_stack_and_the_sample(report):
    out = output(report, "measure_faulthandler")
    fatal = out.index("Fatal Python error: Segmentation fault")
    string_at = out.index("in string_at", fatal)
    decode = re.search(r'06_worker_killed_by_signal/broken\.py", line \d+ in decode', out)
    assert decode and string_at < decode.start()  # innermost first: native call, then its caller
    assert re.search(rf"worker 0 was inside {DAMAGED_FILE} when the loader failed", out)
    # faulthandler chains to PyTorch's handler, and the loss is reported as without it; which
    # RuntimeError ends the traceback is the race README's Symptom counts, not a constant.
    assert out.index(WORKER_SAYS) > string_at
    assert_death_by_signal_reported(out)


def test_num_workers_0_moves_the_crash_into_the_training_process(report):
    out = output(report, "measure_num_workers_0")
    assert "Fatal Python error: Segmentation fault" in out
    assert re.search(r'broken\.py", line \d+ in decode', out)
    assert "DataLoader worker" not in out  # no worker, so PyTorch says nothing at all
    assert "read " not in out.split("Fatal Python error")[1]  # the loop never finished


def test_worker_exceptions_are_not_silent(report):
    out = output(report, "myth_worker_errors_are_silent")
    assert "Caught MalformedSample in DataLoader worker process 0." in out
    assert "Original Traceback (most recent call last):" in out
    assert re.search(rf"MalformedSample: {DAMAGED_FILE}: header puts", out)
    assert "killed by signal" not in out and "exited unexpectedly" not in out


def test_every_run_cleaned_up_its_record_files(report):
    assert _record_folders() - RECORD_FOLDERS_BEFORE == set()


def test_forkserver_names_no_signal_and_reports_the_death_late(report):
    # Python 3.14's default start method: the worker is the fork server's child, so no SIGCHLD
    # reaches the training process: the worker's own ERROR line is the only trace of the signal,
    # and the status check that finds the worker gone waits its 5 s first.
    out = output(report, "measure_forkserver")
    assert WORKER_SAYS in out
    assert "is killed by signal" not in out
    assert re.search(r"RuntimeError: DataLoader worker \(pid\(s\) \d+\) exited unexpectedly", out)
    assert "_queue.Empty" in out


def test_the_graders_seed_moves_the_damaged_file(monkeypatch, tmp_path):
    records = load_scenario_module(FOLDER.name, "_record_files")

    def damaged(folder) -> list[str]:
        folder.mkdir()
        paths = records.write_record_files(folder, 256)
        return [p.name for p in paths if records.read_header(p.read_bytes())[0] != records.HEADER.size]

    monkeypatch.delenv(GRADING_SEED, raising=False)
    assert damaged(tmp_path / "documented") == [DAMAGED_FILE]
    monkeypatch.setenv(GRADING_SEED, "20261124")
    moved = damaged(tmp_path / "moved")
    assert len(moved) == 1 and moved != [DAMAGED_FILE]
