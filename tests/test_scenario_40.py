"""Scenario 40: what the runs show beyond their declarations (tests/test_scenarios.py checks those): each
preempted job of broken.py dies of its workers' SIGTERM, in PyTorch's own words, before its checkpoint;
each of fixed.py's writes the step in progress and exits 0; no job outlives the script.  torch 2.13's
own behaviour behind it, checked in a fresh process: a worker's SIGTERM handler exits quietly when the
signal comes from its parent and dies of it otherwise, and a worker_init_fn's SIG_IGN replaces it."""
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest
from conftest import REPO_ROOT, scenario_report

from scenarios.clinic.doctor.explain import explain_text
from scenarios.clinic.skeleton import unwritten

PREEMPTION = re.compile(r"^preemption (\d): SIGTERM to the job's process group after step 3; (\d) of its (\d) "
                        r"DataLoader workers were gone before any checkpoint; the job (.+?) and (exited -?\d+|ran "
                        r"past its grace and was killed) ([\d.]+) s after the signal$", re.M)


def test_scenario_40_is_written():
    left = unwritten(REPO_ROOT, "40_preemption_kills_workers")
    assert not left, f"scenario 40 is not yet written: {', '.join(left)}"


@pytest.fixture(scope="module")
def report():
    return scenario_report("40")


def _preemptions(report, variant):
    return PREEMPTION.findall(report["variants"][variant]["output_tail"])


def test_broken_jobs_die_of_their_workers_sigterm_before_any_checkpoint(report):
    out = report["variants"]["broken"]["output_tail"]
    runs = _preemptions(report, "broken")
    assert [int(r[0]) for r in runs] == [1, 2, 3]
    for _, gone, workers, saved, ended, _ in runs:
        assert gone == workers == "2" and saved == "wrote no checkpoint" and ended == "exited 1"
    # PyTorch's words for it, from the training process's SIGCHLD handler (torch/csrc/DataLoader.cpp)
    assert re.search(r"RuntimeError: DataLoader worker \(pid \d+\) is killed by signal: Terminated\.", out)
    assert "emergency checkpoint written" not in out


def test_fixed_jobs_checkpoint_the_step_in_progress_and_exit_0(report):
    out = report["variants"]["fixed"]["output_tail"]
    runs = _preemptions(report, "fixed")
    assert [int(r[0]) for r in runs] == [1, 2, 3]
    for _, gone, workers, saved, ended, seconds in runs:
        assert (gone, workers, ended) == ("0", "2", "exited 0")
        assert saved == "wrote its checkpoint at step 4 (40 samples, each once)"
        assert float(seconds) < 10
    assert out.count("emergency checkpoint written at step 4") == 3
    assert "Traceback" not in out and "killed by signal" not in out


@pytest.mark.parametrize("variant", ["broken", "fixed"])
def test_no_preempted_job_outlives_the_script(report, variant):
    assert report["variants"][variant]["outcome"] in ("error", "completed")
    commands = (p.info["cmdline"] or [] for p in psutil.process_iter(["cmdline"]))
    left = [c for c in commands if "--train" in c and "40_preemption_kills_workers" in " ".join(c)]
    assert left == []


# In a fresh interpreter: a loader with one forked worker; SIGTERM to the worker from the process given,
# then what became of the worker.  The training process's own SIGCHLD handler may raise, as in broken.py.
_WORKER_AND_SIGTERM = textwrap.dedent("""
    import os, signal, subprocess, sys, time
    import torch
    from torch.utils.data import DataLoader

    def ignore(worker_id):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    sender, init = sys.argv[1], ignore if sys.argv[2] == "ignore" else None
    it = iter(DataLoader(range(64), batch_size=4, num_workers=1, worker_init_fn=init, multiprocessing_context="fork"))
    next(it)
    worker = it._workers[0]
    try:
        if sender == "parent":
            os.kill(worker.pid, signal.SIGTERM)
        else:
            subprocess.run(["kill", "-TERM", str(worker.pid)], check=True)
        time.sleep(2)  # no join yet: joining reaps the worker before the SIGCHLD handler can look at it
    except RuntimeError as error:
        print("raised:", error)
    worker.join(timeout=2)
    print("exitcode:", worker.exitcode)
    if worker.exitcode is None:
        worker.kill()
""")


@pytest.mark.full
@pytest.mark.parametrize("sender, init, exitcode, raised", [
    ("parent", "none", "0", False),     # handler_SIGTERM: si_pid == getppid() -> _exit(EXIT_SUCCESS)
    ("other", "none", "-15", True),     # anyone else: default action re-raised; SIGCHLD handler raises
    ("other", "ignore", "None", False),  # the fix: the worker lives on
])
def test_torch_worker_sigterm_handler_spares_only_the_parent(sender, init, exitcode, raised):
    done = subprocess.run([sys.executable, "-c", _WORKER_AND_SIGTERM, sender, init], capture_output=True,
                          text=True, timeout=120)
    assert f"exitcode: {exitcode}" in done.stdout, done.stdout + done.stderr
    assert ("raised: DataLoader worker" in done.stdout and "is killed by signal: Terminated." in done.stdout) == raised


def test_explain_names_40_for_a_worker_terminated():
    text = ("Traceback (most recent call last):\n  File \"train.py\", line 50, in train\n    time.sleep(0.2)\n"
            "  File \"/x/torch/utils/data/_utils/signal_handling.py\", line 73, in handler\n"
            "    _error_if_any_worker_fails()\n"
            "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Terminated. \n")
    found = explain_text(text)
    assert found and found[0].scenario == "40"


# A running job whose training process handles SIGTERM, with or without the fix: its worker pids, then it waits.
_RUNNING_JOB = textwrap.dedent("""
    import signal, sys, time
    from torch.utils.data import DataLoader

    def ignore(worker_id):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    signal.signal(signal.SIGTERM, lambda signum, frame: None)
    it = iter(DataLoader(range(64), batch_size=4, num_workers=2, multiprocessing_context="fork",
                         worker_init_fn=ignore if sys.argv[1] == "fixed" else None))
    next(it), next(it)  # one batch from each worker: each has run its worker_init_fn
    print(*[w.pid for w in it._workers], flush=True)
    time.sleep(60)
""")


@pytest.mark.parametrize("variant, risks", [("broken", 1), pytest.param("fixed", 0, marks=pytest.mark.full)])
def test_doctor_running_reads_the_signal_masks(variant, risks):
    from scenarios.clinic.doctor.checks import s40_preemption_kills_workers as check
    from scenarios.clinic.doctor.running import read_job

    job = subprocess.Popen([sys.executable, "-c", _RUNNING_JOB, variant], stdout=subprocess.PIPE, text=True)
    pids = []
    try:
        pids = [int(pid) for pid in job.stdout.readline().split()]
        assert len(pids) == 2
        time.sleep(2)  # past a worker's start-up: doctor --pid judges settled workers only
        read = read_job(job.pid, seconds=2, stacks=False)  # as doctor --pid reads it: the workers found by /proc
        assert sorted(w.pid for w in read.workers) == sorted(pids)  # an ignored SIGTERM still marks a worker
        found = check.running(read)
    finally:  # the workers first: the fixed ones ignore SIGTERM, and nothing may outlive the test
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        job.kill()
        job.wait()
    assert len(found) == risks
    assert all(f.level == "risk" and f.figures["workers_exposed"] == 2 for f in found)


def test_a_lightning_fits_handler_is_a_note_from_the_pid_and_a_handler_of_ones_own_a_risk():
    from scenarios.clinic.doctor.checks import s40_preemption_kills_workers as check
    from scenarios.clinic.doctor.job import Job, Worker

    def job(stack):
        workers = [Worker(pid, "sleeping", 3, settled=True, catches_sigterm=True) for pid in (11, 12)]
        return Job(trainer=10, command="python train.py", seconds=3.0, workers=workers, gone=[], helpers=[],
                   trainer_stacks=[stack], trainer_cpu_s=0.1, fds=20, fd_limit=1024, shm_bytes=0, shm_total=None,
                   cgroup={}, cores=2, stacks_readable=True, trainer_catches_sigterm=True)

    fit = "Process 10: python train.py\n    run (lightning/pytorch/loops/fit_loop.py:216)\n    main (train.py:40)\n"
    own = "Process 10: python train.py\n    train (train.py:31)\n    main (train.py:40)\n"
    assert [f.level for f in check.running(job(fit))] == ["note"]
    assert [f.level for f in check.running(job(own))] == ["risk"]
