"""Scenario 29: what the runs show beyond their declarations (tests/test_scenarios.py checks those):
a stream split by worker alone sends every shard to both ranks with no word from any library;
webdataset's WebDataset refuses 2 ranks with its own ValueError from the worker; split by rank then
by worker, each shard goes to one worker of one rank; where the node split learns its rank; and the
forkserver runs (make test-full)."""
import re
import subprocess
import sys
import tempfile
import time

import psutil
import pytest
import torch.distributed as dist
import webdataset as wds

from torch.multiprocessing import ProcessRaisedException

from conftest import REPO_ROOT, load_scenario_module, scenario_report

FOLDER = "29_stream_split_by_rank_and_worker"
SHARDS, PER_SHARD = 8, 12
RANK_LINE = re.compile(r"^rank (\d) trained on (\d+) samples \((\d+) distinct\) from shards \[([\d, ]+)\]$", re.M)


@pytest.fixture(scope="module")
def report():
    return scenario_report("29")


def shards_by_rank(run):
    lines = RANK_LINE.findall(run["output_tail"])
    return {int(rank): [int(s) for s in shards.split(", ")] for rank, _, _, shards in lines}


def test_broken_gives_both_ranks_every_shard_and_no_library_says_so(report):
    broken = report["variants"]["broken"]
    assert shards_by_rank(broken) == {0: list(range(SHARDS)), 1: list(range(SHARDS))}
    # The only message is the script's own: no warning or traceback from torch or webdataset.
    assert not re.search(r"Warning|Traceback|torch/|webdataset/", broken["output_tail"])


def test_fixed_gives_each_rank_every_second_shard(report):
    assert shards_by_rank(report["variants"]["fixed"]) == {0: [0, 2, 4, 6], 1: [1, 3, 5, 7]}


def test_webdataset_default_raises_in_the_worker_and_the_rank_reraises_it(report):
    tail = report["variants"]["broken_webdataset_default"]["output_tail"]
    assert "ValueError: Caught ValueError in DataLoader worker process" in tail
    assert re.search(r"shardlists\.py\", line \d+, in single_node_only", tail)
    assert "trained on" not in tail  # no rank got as far as its report


@pytest.mark.parametrize("rank", [0, 1])
def test_split_by_node_then_by_worker_reads_the_rank_from_the_environment(monkeypatch, rank):
    # What fixed.py's pipeline does in a worker, without processes: torchrun's RANK and WORLD_SIZE.
    monkeypatch.setenv("RANK", str(rank))
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert list(wds.split_by_node(iter(range(SHARDS)))) == list(range(rank, SHARDS, 2))


def test_without_the_environment_or_a_process_group_split_by_node_passes_everything(monkeypatch):
    # A forkserver or spawned worker of a rank started without RANK in its environment (measure_forkserver.py).
    for name in ("RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    assert not dist.is_initialized()
    assert list(wds.split_by_node(iter(range(SHARDS)))) == list(range(SHARDS))


def test_report_counts_ranks_overlap_and_repeats():
    two_ranks = load_scenario_module(FOLDER, "_two_ranks")
    every = list(range(SHARDS * PER_SHARD))
    figures = two_ranks.report([every, every[:48] * 2])
    assert (figures["on_both_ranks"], figures["repeated_within_a_rank"], figures["unseen"]) == (48, 48, 0)
    assert figures["passes_over_the_data"] == 2.0
    halves = two_ranks.report([every[::2], every[1::2]])
    assert (halves["on_both_ranks"], halves["covered"], halves["passes_over_the_data"]) == (0, 96, 1.0)


def test_the_shards_hold_each_sample_once(tmp_path):
    two_ranks = load_scenario_module(FOLDER, "_two_ranks")
    urls = two_ranks.write_shards(tmp_path)
    stream = wds.DataPipeline(wds.SimpleShardList(urls), wds.tarfile_to_samples())
    assert sorted(int(sample["idx.txt"]) for sample in stream) == list(range(SHARDS * PER_SHARD))


def test_every_split_measured(report):
    figures = report["variants"]["measure_splits"]["metrics"]
    # Split by rank only: each rank's two workers read the same 4 shards.
    assert figures["rank_only_samples_per_rank"] == 2 * figures["rank_then_worker_samples_per_rank"] == 96
    # Hugging Face datasets splits by worker by itself, not by rank: broken.py's figures.
    assert figures["datasets_no_node_split_on_both_ranks"] == figures["worker_only_on_both_ranks"]


def test_forkserver_workers_split_by_rank_only_with_the_rank_in_the_environment(report):
    figures = report["variants"]["measure_forkserver"]["metrics"]
    assert figures["as_torchrun_on_both_ranks"] == 0
    assert figures["without_rank_env_on_both_ranks"] == SHARDS * PER_SHARD


def _one_rank_fails(urls):
    if dist.get_rank() == 1:
        raise ValueError("rank 1 fails before the collective")
    dist.barrier()  # rank 0 would wait here for rank 1


def test_a_rank_that_fails_takes_the_other_down_and_leaves_nothing(tmp_path, monkeypatch):
    two_ranks = load_scenario_module(FOLDER, "_two_ranks")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the shards, and a failed rank's traceback file
    for name in ("RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    before = {child.pid for child in psutil.Process().children(recursive=True)}
    started = time.monotonic()
    with pytest.raises(ProcessRaisedException,
                       match=r"rank 1 fails before the collective|Connection (closed|reset) by peer"):
        two_ranks.run_two_ranks(_one_rank_fails)
    assert time.monotonic() - started < 15
    assert [c.pid for c in psutil.Process().children(recursive=True) if c.pid not in before] == []
    assert list(tmp_path.iterdir()) == []


def test_without_gloo_the_script_says_it_cannot_run_here(monkeypatch, capsys):
    two_ranks = load_scenario_module(FOLDER, "_two_ranks")
    monkeypatch.setattr(dist, "is_gloo_available", lambda: False)
    for name in ("RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(SystemExit) as ended:
        two_ranks.run_two_ranks(_one_rank_fails)
    assert ended.value.code == 3
    assert "cannot run here: this torch build has no gloo backend" in capsys.readouterr().err


@pytest.mark.full  # torchrun starts a fresh interpreter per rank: seconds each on a busy machine
def test_fixed_under_torchrun_as_jobs_start():
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                           str(REPO_ROOT / "scenarios" / FOLDER / "fixed.py")],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "the 2 ranks split the 96 samples: 48 each, 0 on both ranks, 0 unseen" in done.stdout


# ---------------------------------------------------------------- the doctor and explain

LOADERS = "tests/loaders/shard_stream_ranks.py"


@pytest.fixture(scope="module")
def examined_as_a_rank():
    """broken.py's and fixed.py's loaders examined by a doctor told the job has 2 ranks (RANK, WORLD_SIZE
    as torchrun sets them); its probe reads each stream again as rank 0 and as rank 1."""
    from scenarios.clinic.doctor.engine import examine_file

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RANK", "0")
        patch.setenv("WORLD_SIZE", "2")
        return {name: examine_file(f"{LOADERS}:{name}", only=["29"])
                for name in ("worker_split_only", "rank_then_worker")}


def test_the_doctor_reads_broken_as_two_ranks_and_names_29(examined_as_a_rank):
    found = examined_as_a_rank["worker_split_only"]
    assert [(f.scenario, f.level, f.check) for f in found] == [("29", "risk", "stream-not-split-by-rank")]
    assert found[0].evidence.startswith("measured: read as rank 0 and as rank 1 of 2")
    # The whole stream where the probe's time let both ranks read it to the end; else its first samples.
    assert re.search(r"the same 96 samples, the whole stream|the same first \d+ samples in the same order",
                     found[0].evidence)


def test_the_doctor_finds_nothing_in_fixed_read_as_two_ranks(examined_as_a_rank):
    found = examined_as_a_rank["rank_then_worker"]
    assert list(found) == [] and found.probe.outcome == "completed"
    ranks = found.probe.first("ranks")["ranks"]
    assert all(r["samples"] >= 8 for r in ranks) and not set(ranks[0]["hashes"]) & set(ranks[1]["hashes"])
    assert all(r["samples"] == 48 for r in ranks if r["ended"])


def test_outside_a_job_the_doctor_says_it_as_a_general_note(monkeypatch):
    from scenarios.clinic.doctor.engine import examine_file

    for name in ("RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    quiet = examine_file(f"{LOADERS}:worker_split_only", with_probe=False, only=["29"])
    assert list(quiet) == [] and quiet.hidden == 1
    shown = examine_file(f"{LOADERS}:worker_split_only", with_probe=False, only=["29"], show_all=True)
    assert [(f.level, f.check, f.general) for f in shown] == [("note", "stream-not-split-by-rank", True)]


def test_a_rank_that_raises_webdatasets_error_is_29_measured(monkeypatch):
    from types import SimpleNamespace

    from scenarios.clinic.doctor.checks import s29_stream_split_by_rank_and_worker as s29
    from scenarios.clinic.doctor.probe import ProbeResult

    monkeypatch.setenv("WORLD_SIZE", "2")
    raised = ("ValueError: Caught ValueError in DataLoader worker process 0.\nOriginal Traceback …\n"
              "ValueError: you need to add an explicit nodesplitter to your input pipeline for multi-node training")
    probe = ProbeResult(events=[{"event": "ranks", "world_size": 2, "ranks": [{"error": raised}, {"error": raised}]}])
    examined = SimpleNamespace(setup=SimpleNamespace(iterable=True, start_method="fork"), workers=2, loader=None)
    found = s29.measured(examined, probe)
    assert [(f.level, f.check) for f in found] == [("risk", "webdataset-nodesplitter")]
    assert found[0].evidence.endswith("rank 0's loader raised ValueError: you need to add an explicit nodesplitter "
                                      "to your input pipeline for multi-node training")


def test_explain_names_29_from_webdatasets_error_and_nothing_from_fixed(report):
    from scenarios.clinic.doctor.explain import explain_text

    loud = report["variants"]["broken_webdataset_default"]["output"]
    assert {f.scenario for f in explain_text(loud)} == {"29"}
    assert explain_text(report["variants"]["fixed"]["output"]) == []
    bare = "ValueError: you need to add an explicit nodesplitter to your input pipeline for multi-node training"
    assert [f.scenario for f in explain_text(bare)] == ["29"]


@pytest.fixture(scope="module")
def examined_outside_a_job():
    """Two streams whose code asks for a rank, examined with no RANK or WORLD_SIZE set, as a user first
    runs `make doctor LOADER=…`: one reads RANK only to print from rank 0, one splits by the process group."""
    from scenarios.clinic.doctor.engine import examine_file

    with pytest.MonkeyPatch.context() as patch:
        for name in ("RANK", "WORLD_SIZE"):
            patch.delenv(name, raising=False)
        return {name: examine_file(f"{LOADERS}:{name}", only=["29"])
                for name in ("rank_read_for_logging", "split_by_process_group")}


def test_a_word_in_the_code_never_overrules_the_two_ranks_reading(examined_outside_a_job):
    found = examined_outside_a_job["rank_read_for_logging"]
    assert [(f.level, f.check, f.general) for f in found] == [("risk", "stream-not-split-by-rank", False)]
    assert "the same 96 samples" in found[0].evidence and "read as two ranks without being told" in found[0].evidence


def test_a_split_that_asks_the_process_group_is_read_as_it_splits_in_a_job(examined_outside_a_job):
    found = examined_outside_a_job["split_by_process_group"]
    assert list(found) == [] and found.probe.outcome == "completed"
    first, second = (r["hashes"] for r in found.probe.first("ranks")["ranks"])
    assert len(first) == len(second) == 48 and not set(first) & set(second)
