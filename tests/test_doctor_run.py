"""`doctor -- COMMAND`: the user's own command run unchanged for a window, watched from inside every
process it starts, then stopped; each scenario's broken script named by what its run did, its fixed
twin quiet, and nothing of the run left behind."""
import json
import subprocess
import sys
import time

import psutil
import pytest
from conftest import REPO_ROOT

FULL = pytest.mark.full


def doctor_on(*command, seconds=90, cwd=REPO_ROOT):
    done = subprocess.run([sys.executable, "-m", "scenarios", "doctor", "--json", "--seconds", str(seconds), "--",
                           *command], cwd=cwd, capture_output=True, text=True, timeout=seconds + 120)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    return done.returncode, json.loads(done.stdout), done.stderr


def script(number: str, variant: str) -> str:
    return str(next((REPO_ROOT / "scenarios").glob(f"{number}_*")) / f"{variant}.py")


# One scenario per kind of evidence in the test tier; the rest in make test-full.
@pytest.mark.parametrize("number, check", [
    ("13", "duplicate-samples"),                                     # what each worker delivered
    pytest.param("29", "stream-not-split-by-rank", marks=FULL),     # what each rank received
    pytest.param("30", "uneven-batches", marks=FULL),                # each rank's batches, and an epoch's end
    pytest.param("12", "repeated-draws", marks=FULL),                # the workers' random states
    pytest.param("14", "persistent-epoch-state", marks=FULL),        # the workers' copies of the dataset
    pytest.param("34", "shape-recompiles", marks=FULL),              # dynamo's compilations, the batches' shapes
    pytest.param("15", "distributed-set-epoch", marks=FULL),         # each epoch's order
    pytest.param("32", "state-after-iter", marks=FULL),             # a loaded state, and the iterator that went on
    # a saved state's count against the loop's; its fixed twin, a stream under torchdata on 2 ranks, once read as
    # 13 (the observer counted each batch twice: torchdata's iterator's __next__ calls torch's, both watched)
    pytest.param("36", "stream-fast-forward", marks=FULL),
    pytest.param("40", "preempted-workers", marks=FULL),              # what a SIGTERM does to each process
    pytest.param("21", "threads-per-worker", marks=FULL),            # each worker's busy threads
    pytest.param("01", "hang", marks=FULL),                          # the stacks of a run that stalled
])
def test_a_broken_run_is_named_by_what_it_did_and_its_fixed_twin_is_quiet(number, check):
    status, report, _ = doctor_on(sys.executable, script(number, "broken"))
    assert status == 1 and [(f["scenario"], f["check"]) for f in report["findings"]] == [(number, check)], report
    finding = report["findings"][0]
    if finding["evidence"].startswith("after "):  # a run that stalled, read then as --pid reads a job
        assert "of your run with no batch" in finding["evidence"]
    else:
        assert finding["evidence"].startswith("measured in your run: ") and finding["figures"]
    assert report["schema"] == 2
    status, report, _ = doctor_on(sys.executable, script(number, "fixed"))
    assert status == 0 and report["findings"] == [], report


@FULL
def test_accelerates_resumed_job_that_saves_a_state_each_batch_is_quiet():
    # 35's fixed job: 2 launches of 2 ranks, Accelerate's loader saving its state after every batch it yields
    status, report, _ = doctor_on(sys.executable, script("35", "fixed"))
    assert status == 0 and report["findings"] == [], report


@FULL
def test_ranks_started_by_torchrun_are_each_watched():
    status, report, _ = doctor_on(sys.executable, "-m", "torch.distributed.run", "--standalone",
                                  "--nproc-per-node", "2", script("29", "broken"))
    assert status == 1 and [f["scenario"] for f in report["findings"]] == ["29"], report
    assert "ranks 0, 1" in report["run"]


def test_a_run_past_its_window_is_stopped_and_leaves_nothing(tmp_path):
    train = tmp_path / "train.py"
    train.write_text("import time\nimport torch\nfrom torch.utils.data import DataLoader\n\n"
                     "if __name__ == '__main__':\n"
                     "    while True:  # epochs for ever, as a job that trains until it is stopped\n"
                     "        for batch in DataLoader(list(range(64)), batch_size=8, num_workers=2):\n"
                     "            time.sleep(0.05)\n")
    started = time.monotonic()
    status, report, said = doctor_on(sys.executable, str(train), seconds=8, cwd=tmp_path)
    assert status == 0 and report["findings"] == [] and report["run"].startswith("stopped after")
    assert time.monotonic() - started < 60
    assert not [p for p in psutil.process_iter(["cmdline"]) if str(train) in " ".join(p.info["cmdline"] or [])]


def test_no_such_command_is_bad_input():
    done = subprocess.run([sys.executable, "-m", "scenarios", "doctor", "--", "no-such-trainer", "train.py"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.startswith("error: no such command: no-such-trainer")
    assert "Traceback" not in done.stderr


# The frameworks build the DataLoader inside the run: Lightning from train_dataloader(), the Hugging Face
# Trainer from its train_dataset, Accelerate by preparing the user's loader (a DataLoader subclass).
RUNS = REPO_ROOT / "tests" / "runs"


@pytest.mark.parametrize("command, fixed_flag, scenario", [
    pytest.param([sys.executable, str(RUNS / "lightning_stream.py")], "--split", "13", marks=FULL),
    pytest.param([sys.executable, str(RUNS / "hf_trainer_augment.py")], "--per-worker", "12", marks=FULL),
    pytest.param([sys.executable, "-m", "accelerate.commands.launch", "--cpu", "--num_processes", "2",
                  str(RUNS / "accelerate_stream.py")], "--split", "13", marks=FULL),
], ids=["lightning", "hf-trainer", "accelerate"])
def test_a_frameworks_own_loader_is_watched_unchanged(command, fixed_flag, scenario):
    status, report, _ = doctor_on(*command)
    assert status == 1 and [f["scenario"] for f in report["findings"]] == [scenario], report
    status, report, _ = doctor_on(*command, fixed_flag)
    assert status == 0 and report["findings"] == [], report


def test_a_loader_built_before_its_process_joined_the_job_learns_its_rank_at_iter(monkeypatch):
    # Lightning's ranks build the loader in the script and start the process group in fit(): fresh-50's run_j,
    # whose two ranks' identical streams read as two unranked loaders until the record was written again
    from scenarios.clinic.run import loop_hook

    written = []
    monkeypatch.setattr(loop_hook, "write", written.append)
    loader = type("Loader", (), {"sampler": None})()
    loader._clinic_record = {"k": "loader", "pid": 1, "lid": 1, "rank": None}
    monkeypatch.delenv("RANK", raising=False)
    loop_hook._ranked(loader)
    assert written == []
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    loop_hook._ranked(loader)
    loop_hook._ranked(loader)   # once known, not written again
    assert written == [{"k": "loader", "pid": 1, "lid": 1, "rank": 1}]
