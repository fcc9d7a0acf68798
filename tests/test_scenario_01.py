"""Scenario 01: what the runs show beyond their declarations (tests/test_scenarios.py checks
those): where the broken workers wait, that no remedy but the fix delivers a batch, what each
start method costs, and that the fixed loader yields what the main process yields."""
import re
import sys

import pytest
import torch
from torch.utils.data import DataLoader

from conftest import REPO_ROOT, load_scenario_module, scenario_report
from fixes.per_worker import PerWorker

FOLDER = REPO_ROOT / "scenarios" / "01_fork_inherited_lock"


@pytest.fixture(scope="module")
def report():
    return scenario_report("01")


def _line_of(script: str, needle: str, after: str) -> int:
    """The line number of the first `needle` after `after`: where the script waits."""
    lines = (FOLDER / script).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if after in line)
    return next(i for i in range(start, len(lines)) if needle in lines[i]) + 1


def _process_stacks(stacks: str) -> list[str]:
    return [block for block in re.split(r"\n\s*\n(?=Process \d+)", stacks) if block.strip()]


def _sections(output: str) -> dict[str, str]:
    """measure_start_methods.py's output, split at its '--- multiprocessing_context=…' lines."""
    parts = re.split(r"^--- multiprocessing_context='(\w+)'$", output, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def test_broken_hangs_silently_before_the_first_batch(report):
    out = report["variants"]["broken"]["output_tail"]
    assert "step 0" not in out and "epoch done" not in out
    assert not re.search(r"Error|Traceback", out), "the hang should be silent, not an error"


def test_broken_workers_are_stuck_on_the_inherited_lock(report):
    stacks = report["variants"]["broken"]["stacks"]
    waits_at = _line_of("broken.py", "with self.lock:", after="def __getitem__(self, label)")
    stuck = [block for block in _process_stacks(stacks)
             if f"LabelCache.__getitem__ (broken.py:{waits_at})" in block]
    assert len(stuck) == 2, f"expected both workers waiting at broken.py:{waits_at}:\n{stacks}"
    assert all("_worker_loop" in block for block in stuck)
    # The main process is not stuck on a lock: it polls the workers' result queue.
    main = [block for block in _process_stacks(stacks) if "_try_get_data" in block]
    assert len(main) == 1 and "main (broken.py:" in main[0]
    # Its refresher is long past the fetch, sleeping: in the parent the lock was released.
    sleeps_at = _line_of("broken.py", "time.sleep(300)", after="def _refresh_forever")
    assert f"LabelCache._refresh_forever (broken.py:{sleeps_at})" in main[0]


def test_fixed_delivers_every_batch_whole(report):
    out = report["variants"]["fixed"]["output_tail"]
    assert len(re.findall(r"^step \d+: 32 images, first is a class_\d$", out, flags=re.M)) == 8


def test_timeout_ends_the_wait_without_a_single_batch(report):
    out = report["variants"]["myth_timeout"]["output_tail"]
    assert "step 0" not in out
    assert "training: waiting for the first batch" in out


def test_spawn_and_forkserver_fail_at_once_on_the_unpicklable_cache(report):
    out = report["variants"]["myth_spawn_alone"]["output_tail"]
    # PyTorch's own hint, then one pickling error per start method; no batch under either.
    assert "Got pickle error when attempting to start a worker Process" in out
    assert len(re.findall(r"^TypeError: cannot pickle '_thread\.lock' object$", out, flags=re.M)) == 2
    assert "step 0" not in out
    assert "no batch under forkserver or spawn" in out


def test_start_methods_all_finish_and_only_fork_starts_for_free(report):
    run = report["variants"]["measure_start_methods"]
    sections = _sections(run["output_tail"])
    assert set(sections) == {"fork", "forkserver", "spawn"}
    assert all(section.count("epoch done") == 1 for section in sections.values())
    figures = run["metrics"]
    # A worker that re-imports torch costs a few tenths of a CPU-second at the very least.
    assert figures["spawn_startup_s"] >= figures["fork_startup_s"] + 0.3
    assert figures["forkserver_startup_s"] >= figures["fork_startup_s"] + 0.3
    # Where the main script runs again: never in a forked worker, in every spawned one (2),
    # and, before CPython's fix for gh-126631 (3.13), in every forkserver worker as well.
    reimports = {context: section.count("imported as __mp_main__") for context, section in sections.items()}
    assert reimports["fork"] == 0 and reimports["spawn"] == 2
    if sys.version_info < (3, 13):
        assert reimports["forkserver"] == 2


def test_global_version_breaks_in_a_spawned_worker(report):
    assert "'NoneType' object is not subscriptable" in report["variants"]["myth_global_vs_init"]["output_tail"]


def test_oracle_fixed_workers_yield_what_the_main_process_yields():
    fixed = load_scenario_module(FOLDER.name, "fixed")
    parent_cache = fixed.LabelCache()
    parent_cache.refreshing.wait()  # fork while the parent's refresher holds its lock, as in the script
    dataset = fixed.TaggedImages(PerWorker(fixed.LabelCache))
    # timeout: a regression here must fail the test, not hang it.
    with_workers = list(DataLoader(dataset, batch_size=32, num_workers=2, timeout=60,
                                   multiprocessing_context="fork"))
    in_process = list(DataLoader(dataset, batch_size=32, num_workers=0))
    assert len(with_workers) == len(in_process) == 8
    for (images_w, names_w), (images_0, names_0) in zip(with_workers, in_process):
        assert torch.equal(images_w, images_0) and names_w == names_0


def test_polars_workers_hang_in_collect_with_nothing_said(report):
    run = report["variants"]["broken_polars"]
    assert "step 0" not in run["output_tail"]
    assert not re.search(r"Error|Traceback|Warning", run["output_tail"]), "Polars' hang is silent"
    collects_at = _line_of("broken_polars.py", ".collect())", after="def __getitem__(self, index)")
    stuck = [block for block in _process_stacks(run["stacks"])
             if "LazyFrame.collect (polars/" in block
             and f"ParquetShards.__getitem__ (broken_polars.py:{collects_at})" in block]
    assert len(stuck) == 2 and all("_worker_loop" in block for block in stuck), run["stacks"]
    # The main process finished its own query long ago and polls the workers' result queue.
    main = [block for block in _process_stacks(run["stacks"]) if "_try_get_data" in block]
    assert len(main) == 1 and "main (broken_polars.py:" in main[0]


def test_spawned_polars_workers_read_every_shard_right(report):
    polars_fixed = load_scenario_module(FOLDER.name, "fixed_polars")  # imports Polars, runs no query
    steps = re.findall(r"^step (\d+): mean x per label \[([^\]]+)\]", report["variants"]["fixed_polars"]["output_tail"],
                       flags=re.M)
    assert [int(step) for step, _ in steps] == list(range(polars_fixed.SHARDS))
    for step, means in steps:  # the script's x is id / 2; the first three labels of shard `step`
        ids = torch.arange(int(step) * polars_fixed.ROWS, (int(step) + 1) * polars_fixed.ROWS, dtype=torch.float64)
        expected = [(ids[ids % 10 == label] * 0.5).mean().item() for label in range(3)]
        assert [float(mean) for mean in means.split(", ")] == pytest.approx(expected)


def test_the_running_rule_names_a_lock_only_where_the_kernel_shows_a_futex_wait():
    """A worker asleep in time.sleep or a read is slow, not locked: only a futex wait (or a kernel that
    does not say) is 01's lock that nothing releases (issue 44: a stalled rank's sleep was called a lock)."""
    from scenarios.clinic.doctor.checks import s01_fork_inherited_lock as check
    from scenarios.clinic.doctor.job import Job, Worker

    trainer = ("Process 10: python train.py\nThread 10 (idle): \"MainThread\"\n    poll (connection.py:257)\n"
               "    _try_get_data (torch/utils/data/dataloader.py:1275)\n")
    worker = ("Process 11: python train.py\nThread 11 (idle): \"MainThread\"\n    __getitem__ (train.py:20)\n"
              "    _worker_loop (torch/utils/data/_utils/worker.py:351)\n")

    def job(sleeps_in):
        workers = [Worker(pid, "sleeping", 3, cpu_s=[1.0, 1.0], stack=worker, sleeps_in=sleeps_in)
                   for pid in (11, 12)]
        return Job(trainer=10, command="python train.py", seconds=3.0, workers=workers, gone=[], helpers=[],
                   trainer_stacks=[trainer] * 3, trainer_cpu_s=0.0, fds=20, fd_limit=1024, shm_bytes=0,
                   shm_total=None, cgroup={}, cores=2, stacks_readable=True)

    assert [f.check for f in check.running(job("futex_do_wait"))] == ["hang"]
    assert [f.check for f in check.running(job(""))] == ["hang"]          # the kernel did not say
    assert check.running(job("hrtimer_nanosleep")) == []                 # time.sleep in __getitem__
    assert check.running(job("pipe_read")) == []                         # a read
