"""Scenario 33: what the runs show beyond their declarations (tests/test_scenarios.py checks those):
one feeder traceback per lost batch and no batch, where each process waits, what the fixed loader
delivers, and that explain, the doctor's probe and `doctor --pid` name scenario 33 from what the
broken run really printed and where it really stopped."""
import itertools
import re
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import psutil
import pytest
import torch
from torch.utils.data import DataLoader

from conftest import REPO_ROOT, load_scenario_module, scenario_report
from leftovers import tied
from scenarios.clinic.doctor.checks import s33_unpicklable_sample_hangs as check
from scenarios.clinic.doctor.explain import explain_text
from scenarios.clinic.doctor.job import Job, Worker
from scenarios.clinic.doctor.stacks import processes

FOLDER = REPO_ROOT / "scenarios" / "33_unpicklable_sample_hangs"
FEEDER_FRAME = re.compile(r'multiprocessing/queues\.py", line \d+, in _feed$', re.M)
PICKLING_ERROR = re.compile(r"^TypeError: cannot pickle '_io\.BufferedReader' object$", re.M)


@pytest.fixture(scope="module")
def report():
    return scenario_report("33")


def _stacks_by_role(stacks: str) -> tuple[list[str], list[str]]:
    """(the training process's dump, the workers' dumps) from the runner's py-spy dump of the hang."""
    blocks = [block for _, block in processes(stacks)]
    return [b for b in blocks if "_try_get_data" in b], [b for b in blocks if "_worker_loop" in b]


def _job(trainer: list[str], workers: list[str], cpu_s: float = 0.0) -> Job:
    """The hung run as `doctor --pid` would have read it over 6 s: the runner's own stacks of it."""
    return Job(trainer=1, command="python broken.py", seconds=6.0,
               workers=[Worker(pid=10 + n, state="sleeping", threads=3, cpu_s=[0.0, cpu_s], stack=stack,
                               sampled_at=[0.0, 6.0]) for n, stack in enumerate(workers)],
               gone=[], helpers=[], trainer_stacks=trainer * 3, trainer_cpu_s=0.0, fds=None, fd_limit=None,
               shm_bytes=0, shm_total=None, cgroup={}, cores=2, stacks_readable=True)


def test_broken_prints_a_feeder_traceback_per_lost_batch_and_delivers_none(report):
    out = report["variants"]["broken"]["output"]
    lost = len(PICKLING_ERROR.findall(out))
    # Each worker makes prefetch_factor (2) batches and then waits for indices that never come.
    assert len(FEEDER_FRAME.findall(out)) == lost == 4, out[-3000:]
    assert "step 0" not in out and "epoch done" not in out
    assert "RuntimeError" not in out and "exited unexpectedly" not in out, "PyTorch should see nothing wrong"


def test_broken_waits_in_the_result_queue_while_its_workers_wait_for_indices(report):
    trainer, workers = _stacks_by_role(report["variants"]["broken"]["stacks"])
    assert len(trainer) == 1 and "main (broken.py:" in trainer[0]
    assert len(workers) == 2, report["variants"]["broken"]["stacks"]
    for worker in workers:  # idle in the index queue's get, called by the worker loop: nothing to make
        main_thread = worker.split("Thread ")[1]
        assert re.search(r"Queue\.get \(multiprocessing/queues\.py:\d+\)\n\s+_worker_loop", main_thread), worker
        assert "broken.py" not in main_thread.split("_worker_loop")[0]


def test_fixed_delivers_every_batch_with_its_captions(report):
    out = report["variants"]["fixed"]["output"]
    steps = re.findall(r"^step (\d+) at [\d.]+ s: 8 images, first is '(.+)'$", out, flags=re.M)
    captions = [line.split("\t")[1] for line in (FOLDER / "captions.txt").read_text().splitlines()]
    assert steps == [(str(n), captions[8 * n]) for n in range(8)]
    assert not FEEDER_FRAME.search(out)


def test_timeout_ends_the_wait_after_the_feeder_said_why(report):
    out = report["variants"]["measure_timeout"]["output"]
    assert "step 0" not in out
    assert PICKLING_ERROR.search(out).start() < out.index("RuntimeError: DataLoader timed out after 6 seconds")


def test_forkserver_and_spawn_lose_the_same_batches(report):
    out = report["variants"]["measure_start_methods"]["output"]
    sections = dict(zip(*[iter(re.split(r"^--- multiprocessing_context='(\w+)'$", out, flags=re.M)[1:])] * 2))
    assert set(sections) == {"forkserver", "spawn"}
    for section in sections.values():  # the workers started and made their batches; none arrived
        assert len(FEEDER_FRAME.findall(section)) == len(PICKLING_ERROR.findall(section)) == 4, section[-3000:]
        assert "step 0" not in section


def test_without_workers_broken_dataset_delivers_every_batch(report):
    out = report["variants"]["measure_without_workers"]["output"]
    assert len(re.findall(r"^step \d+ at ", out, flags=re.M)) == 8 and not FEEDER_FRAME.search(out)


def test_oracle_fixed_workers_yield_what_the_main_process_yields():
    fixed = load_scenario_module(FOLDER.name, "fixed")
    dataset = fixed.CaptionedImages(fixed.CAPTIONS)
    # timeout: a regression here must fail the test, not hang it.
    with_workers = list(DataLoader(dataset, batch_size=8, num_workers=2, collate_fn=fixed.collate, timeout=60))
    in_process = list(DataLoader(dataset, batch_size=8, num_workers=0, collate_fn=fixed.collate))
    assert len(with_workers) == len(in_process) == 8
    for (pixels_w, labels_w, captions_w), (pixels_0, labels_0, captions_0) in zip(with_workers, in_process):
        assert torch.equal(pixels_w, pixels_0) and torch.equal(labels_w, labels_0) and captions_w == captions_0


def test_explain_names_33_from_the_broken_output_alone(report):
    found = [(f.scenario, f.check) for f in explain_text(report["variants"]["broken"]["output"])]
    assert found == [("33", "unpicklable-sample")]


@pytest.mark.full  # explain on every interleaving (CPU seconds); the broken run's own output is explained in make test
def test_explain_names_33_from_two_workers_feeder_tracebacks_however_their_lines_interleave(report):
    # Each worker's feeder prints its traceback a frame per write into one pipe: under load (CI, a busy
    # core) one worker's error line can land right under the other's header, away from the _feed frame.
    output = report["variants"]["broken"]["output"].splitlines()
    first = next(i for i, line in enumerate(output) if line.startswith("Traceback"))
    error = next(i for i in range(first, len(output)) if PICKLING_ERROR.match(output[i]))
    lines = output[first:error + 1]
    writes = [[lines[0]]] + [lines[i:j] for i, j in itertools.pairwise(
        [i for i, line in enumerate(lines) if line.lstrip().startswith("File ")] + [len(lines) - 1])] + [[lines[-1]]]
    assert FEEDER_FRAME.search("\n".join(writes[1])) and len(writes) >= 3
    one, two = writes * 2, writes   # a worker's two tracebacks while the other prints one
    named = set()
    for from_one in itertools.combinations(range(len(one) + len(two)), len(one)):
        sources, merged = (iter(one), iter(two)), []
        for at in range(len(one) + len(two)):
            merged += next(sources[at not in from_one])
        named.add(tuple((f.scenario, f.check) for f in explain_text("\n".join(merged))))
    assert named == {(("33", "unpicklable-sample"),)}


def test_a_certain_11_in_the_same_log_stays_beside_33():
    # 33 outranks only what is uncertain: an open file a spawned worker could not take, in the
    # DataLoader's own frames, is 11's failure too, whatever a feeder printed before it.
    spawn = ("Traceback (most recent call last):\n"
             '  File "torch/utils/data/dataloader.py", line 1176, in __init__\n    w.start()\n'
             '  File "python3.11/multiprocessing/reduction.py", line 60, in dump\n'
             "    ForkingPickler(file, protocol).dump(obj)\n"
             "TypeError: cannot pickle '_io.BufferedReader' object\n")
    feeder = ("Traceback (most recent call last):\n"
              '  File "/usr/lib/python3.11/multiprocessing/queues.py", line 244, in _feed\n'
              '  File "/usr/lib/python3.11/multiprocessing/reduction.py", line 51, in dumps\n'
              "TypeError: cannot pickle '_io.BufferedReader' object\n")
    found = [(f.scenario, f.level) for f in explain_text(feeder + "\n\n" + spawn)]
    assert found == [("33", "likely"), ("11", "certain")]


def test_explain_names_33_before_the_timeout_it_caused(report):
    found = [(f.scenario, f.check) for f in explain_text(report["variants"]["measure_timeout"]["output"])]
    # The timeout alone says only that a batch never came (01's general hang); the feeder's traceback says why.
    assert found == [("33", "unpicklable-sample"), ("01", "hang")]


def test_explain_leaves_a_start_methods_pickling_error_to_09():
    spawn = ("Traceback (most recent call last):\n"
             '  File "torch/utils/data/dataloader.py", line 1176, in __init__\n    w.start()\n'
             '  File "python3.11/multiprocessing/reduction.py", line 60, in dump\n'
             "    ForkingPickler(file, protocol).dump(obj)\n"
             "TypeError: cannot pickle 'generator' object\n")
    assert [(f.scenario, f.check) for f in explain_text(spawn)] == [("09", "pickle-for-workers")]


def test_the_probe_rule_reads_the_feeder_traceback(report):
    examined = SimpleNamespace(workers=2)
    hung = SimpleNamespace(output=report["variants"]["broken"]["output"].splitlines(), outcome="hang",
                           stall_s=7.5, stage="iterate")
    found = check.measured(examined, hung)
    assert [(f.scenario, f.level, f.check) for f in found] == [("33", "risk", "unpicklable-sample")]
    assert "4 batch(es)" in found[0].evidence and "cannot pickle '_io.BufferedReader'" in found[0].evidence
    healthy = SimpleNamespace(output=report["variants"]["fixed"]["output"].splitlines(), outcome="completed",
                              stall_s=0.0, stage="draws")
    assert check.measured(examined, healthy) == []


def test_the_running_rule_on_the_hung_runs_own_stacks(report):
    trainer, workers = _stacks_by_role(report["variants"]["broken"]["stacks"])
    found = check.running(_job(trainer, workers))
    assert [(f.scenario, f.check) for f in found] == [("33", "lost-batch")]
    # Workers that use CPU are making something; a trainer that is not waiting for data has no lost batch.
    assert check.running(_job(trainer, workers, cpu_s=3.0)) == []
    assert check.running(_job(workers[:1], workers)) == []


def _hung_job():
    return subprocess.Popen(tied([sys.executable, str(FOLDER / "broken.py")]), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True, cwd=REPO_ROOT)


def _end(job: subprocess.Popen) -> None:
    tree = [job.pid] + [p.pid for p in psutil.Process(job.pid).children(recursive=True)]
    for pid in tree:
        try:
            psutil.Process(pid).send_signal(signal.SIGKILL)
        except psutil.Error:
            pass
    job.wait(timeout=30)
    psutil.wait_procs([psutil.Process(p) for p in tree if psutil.pid_exists(p)], timeout=15)


@pytest.mark.full  # a live job examined for 6 s
def test_doctor_pid_names_33_on_the_hung_job():
    from scenarios.clinic.doctor.engine import examine_running

    job = _hung_job()
    try:
        deadline = time.monotonic() + 60
        for line in job.stdout:  # the first lost batch: the job now waits for ever
            if line.startswith("TypeError: cannot pickle") or time.monotonic() > deadline:
                break
        time.sleep(2.0)
        found = [(f.scenario, f.check) for f in examine_running(job.pid, seconds=4.0)]
        assert ("33", "lost-batch") in found
        assert job.poll() is None, "examining it must not end it"
    finally:
        _end(job)


@pytest.mark.full  # the doctor's probe waits out its stall limit
def test_doctor_probe_names_33_on_the_broken_loader(tmp_path):
    from scenarios.clinic.doctor.engine import examine_file

    train = tmp_path / "train33.py"
    # broken.py loaded under a name of its own: another scenario's `broken` may be imported in this process.
    train.write_text(f"import importlib.util\nimport sys\nsys.path.insert(0, {str(FOLDER)!r})\n"
                     f"spec = importlib.util.spec_from_file_location('s33_broken', {str(FOLDER / 'broken.py')!r})\n"
                     "broken = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(broken)\n"
                     "from torch.utils.data import DataLoader\n\n\ndef make_loader():\n"
                     "    return DataLoader(broken.CaptionedImages(broken.CAPTIONS), batch_size=8, num_workers=2,\n"
                     "                      collate_fn=broken.collate)\n")
    found = [(f.scenario, f.check) for f in examine_file(f"{train}:make_loader", only=["33"])]
    assert found == [("33", "unpicklable-sample")]
