"""Scenario 30: what the runs show beyond their declarations (tests/test_scenarios.py checks those):
the split by hand gives the ranks 5 and 4 batches, rank 0 waits in DDP's backward() and rank 1 in its
barrier until gloo's own timeout, torchrun stops the job and nothing is left; the DistributedSampler
gives 5 and 5; the evaluation padding counts 2 of 10 items twice; and a hung job is named by the
doctor from the launcher's PID."""
import re

import psutil
import pytest

from conftest import REPO_ROOT, examined, scenario_report
from leftovers import hung_job

TIMEOUT = re.compile(r"^\[rank(\d)\]: RuntimeError: \[[^]]*unbound_buffer\.cc:\d+\] "
                     r"Timed out waiting 8000ms for recv operation to complete$", re.M)


@pytest.fixture(scope="module")
def report():
    return scenario_report("30")


def _frame_before_error(output: str, rank: int) -> str:
    """The last line of the rank's own script in its traceback: where it waited."""
    lines = re.findall(rf"^\[rank{rank}\]:     (.+)$", output, re.M)
    return next((line for line in reversed(lines) if "backward()" in line or "barrier()" in line), "")


def test_broken_ranks_wait_in_different_collectives_until_gloos_timeout(report):
    run = report["variants"]["broken"]
    out = run["output_tail"]
    assert "rank 0: 5 batches; every rank: [5, 4]" in out and "rank 1: 4 batches; every rank: [5, 4]" in out
    assert "rank 1: ran 4 batches, waiting for every rank before saving" in out
    assert "rank 0: ran" not in out  # rank 0 never left its loop: its fifth backward() did not return
    timed_out = {int(r) for r in TIMEOUT.findall(out)}
    # Both wait for the same 8 s; torchrun stops the other on the first failure, so one or both print it.
    assert timed_out and timed_out <= {0, 1}
    if 0 in timed_out:
        assert "loss.backward()" in _frame_before_error(out, 0)
    if 1 in timed_out:
        assert "dist.barrier()" in _frame_before_error(out, 1)
    assert "ChildFailedError" in out and "broken.py FAILED" in out
    # The job ended by the process group's timeout, not by the runner's limit.
    assert not run["stacks"]


def test_fixed_gives_every_rank_the_same_batches(report):
    out = report["variants"]["fixed"]["output_tail"]
    assert "rank 0: 5 batches; every rank: [5, 5]" in out and "rank 1: 5 batches; every rank: [5, 5]" in out
    assert not TIMEOUT.search(out) and "Traceback" not in out


def test_the_split_counts_match_pytorchs_own_arithmetic():
    # 33 samples on 2 ranks: by hand 17 and 16, the sampler pads to 34 = 17 and 17; batches of 4.
    from torch.utils.data import DistributedSampler
    by_hand = [len(range(r, 33, 2)) for r in (0, 1)]
    sampled = [len(DistributedSampler(range(33), num_replicas=2, rank=r, shuffle=False)) for r in (0, 1)]
    assert by_hand == [17, 16] and sampled == [17, 17]
    assert [-(-n // 4) for n in by_hand] == [5, 4] and [-(-n // 4) for n in sampled] == [5, 5]


def test_evaluation_padding_counts_two_items_twice(report):
    figures = report["variants"]["measure_eval_padding"]["metrics"]
    assert (figures["padded_counted"], figures["padded_counted_twice"]) == (12, 2)
    assert figures["padded_accuracy_pct"] == 75.0 != figures["true_accuracy_pct"]
    assert figures["unpadded_accuracy_pct"] == figures["true_accuracy_pct"] == 70.0


def test_forkserver_workers_change_neither_cause_nor_fix(report):
    figures = report["variants"]["measure_forkserver"]["metrics"]
    assert [figures[f"by_hand_batches_rank{r}"] for r in (0, 1)] == [5, 4]
    assert [figures[f"sampler_batches_rank{r}"] for r in (0, 1)] == [5, 5]
    assert "workers started by forkserver" in report["variants"]["measure_forkserver"]["output_tail"]


@pytest.mark.full  # a third torchrun job (3 imports of torch)
def test_the_doctor_names_the_rank_that_waits_from_the_launchers_pid():
    # rank 1 at its barrier: rank 0 is in its fifth backward() by now; rank 1's workers exit with its loop
    with hung_job(REPO_ROOT / "tests" / "jobs" / "uneven_ranks.py", settle_s=3.0,
                  ready=lambda lines: lines[-1].startswith("rank 1: ran 4 batches")) as job:
        findings = examined(job.pid, lambda found: any(f.scenario == "30" for f in found), only=["30"])
        named = [f for f in findings if f.scenario == "30"]
        assert [f.check for f in named] == ["rank-waits-in-collective"], [f.evidence for f in findings]
        ranks = [p.pid for p in psutil.Process(job.pid).children()]
        assert any(f"rank 0 of 2 (process {pid})" in named[0].evidence for pid in ranks)  # the rank with 5 batches
        assert "backward" in named[0].evidence


def test_explain_names_30_on_the_runs_own_output_and_on_nccls_line_and_says_what_decides(report):
    from scenarios.clinic.doctor.explain import explain_text

    nccl = ("[rank1]:[E1127 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, "
            "Timeout(ms)=600000) ran for 600020 milliseconds before timing out.")
    for text in (report["variants"]["broken"]["output_tail"], nccl):
        found = explain_text(text)
        assert [(f.scenario, f.check) for f in found] == [("30", "collective-timeout")]
        assert "31" in found[0].fix and "where was each rank" in found[0].fix
    assert explain_text(report["variants"]["fixed"]["output_tail"]) == []


def _watchdog(rank: int, op: str = "BROADCAST") -> str:
    return (f"[E ProcessGroupNCCL.cpp:475] [Rank {rank}] Watchdog caught collective operation timeout: "
            f"WorkNCCL(SeqNum=1, OpType={op}, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800584 "
            "milliseconds before timing out.")


@pytest.mark.parametrize("log, said", [
    # three ranks time out in a broadcast: the one they waited for is the rank missing among them
    ("\n".join(_watchdog(rank) for rank in (1, 2, 3)), "rank 1, 2, 3 timed out; rank 0 printed no timeout"),
    # a trainer's progress line glued to the watchdog's: the watchdog's own rank is the one that waited
    ("Epoch 9, Rank 0, world_size 2: 16batch [00:17]" + _watchdog(1, "ALLTOALL_BASE"),
     "rank 1 timed out; rank 0 printed no timeout"),
    # torch 1.x's gloo wording, raised in the collective, at the end of the first epoch as the user says
    ("after successfully completing the 1st epoch:\nTraceback (most recent call last):\n  File \"torch/distributed/"
     "__init__.py\", line 324, in all_reduce\nRuntimeError: [third_party/gloo/gloo/transport/tcp/buffer.cc:76] "
     "Read timeout [127.0.0.1]:32444", "the wait began at the end of an epoch"),
])
def test_explain_reads_which_ranks_timed_out_and_when_and_stays_possible(log, said):
    from scenarios.clinic.doctor.explain import explain_text

    found = explain_text(log)
    assert [(f.scenario, f.check, f.level) for f in found] == [("30", "collective-timeout", "possible")]
    assert said in found[0].evidence and "where was each rank" in found[0].evidence


def test_explain_names_no_absent_rank_where_fewer_ranks_waited_than_are_missing():
    from scenarios.clinic.doctor.explain import explain_text

    found = explain_text("\n".join(f"Epoch 9, Rank {rank}, world_size 8: 35batch" for rank in range(8))
                         + "\n" + _watchdog(4, "ALLREDUCE"))
    assert [f.scenario for f in found] == ["30"] and "printed no timeout" not in found[0].evidence


def _job(stack: str, trainer_cpu_s: float, worker_cpu_s: float):
    from scenarios.clinic.doctor.job import Job, Worker

    workers = [Worker(pid, "sleeping", 3, cpu_s=[1.0, 1.0 + worker_cpu_s]) for pid in (11, 12)]
    return Job(trainer=10, command="python -u train.py", seconds=3.0, workers=workers, gone=[], helpers=[],
               trainer_stacks=[stack] * 3, trainer_cpu_s=trainer_cpu_s, fds=20, fd_limit=1024, shm_bytes=0,
               shm_total=None, cgroup={}, cores=2, stacks_readable=True)


IN_BACKWARD = """Process 10: python -u train.py
Thread 10 (idle): "MainThread"
    _engine_run_backward (torch/autograd/graph.py:979)
    backward (torch/autograd/__init__.py:395)
    backward (torch/_tensor.py:623)
    train (train.py:52)
"""
IN_BARRIER = IN_BACKWARD.replace("_engine_run_backward (torch/autograd/graph.py:979)",
                                 "barrier (torch/distributed/distributed_c10d.py:5356)")
# DDP's forward syncs its buckets with every rank before the model runs (31's healthy rank waits there)
IN_DDP_FORWARD = IN_BACKWARD.replace("_engine_run_backward (torch/autograd/graph.py:979)",
                                     "DistributedDataParallel._pre_forward (torch/nn/parallel/distributed.py:1775)")
IN_MODEL = IN_BACKWARD.replace("_engine_run_backward (torch/autograd/graph.py:979)", "forward (model.py:12)")
WAITS_FOR_BATCH = """Process 10: python -u train.py
Thread 10 (idle): "MainThread"
    poll (multiprocessing/connection.py:257)
    get (multiprocessing/queues.py:113)
    _try_get_data (torch/utils/data/dataloader.py:1275)
    _next_data (torch/utils/data/dataloader.py:1450)
    train (train.py:48)
"""


def test_the_running_rule_wants_a_collective_no_cpu_and_idle_workers():
    from scenarios.clinic.doctor.checks import s30_uneven_batches_across_ranks as check

    for stack in (IN_BACKWARD, IN_BARRIER, IN_DDP_FORWARD):
        assert [f.check for f in check.running(_job(stack, 0.0, 0.0))] == ["rank-waits-in-collective"]
    assert check.running(_job(IN_MODEL, 0.0, 0.0)) == []       # the model's own code: not a collective
    assert check.running(_job(IN_BACKWARD, 2.5, 0.0)) == []    # a backward that computes: CPU used
    assert check.running(_job(IN_BACKWARD, 0.0, 1.0)) == []    # workers still making batches
    assert check.running(_job(WAITS_FOR_BATCH, 0.0, 0.0)) == []  # waiting for data: its loader (31, 01)


def test_one_rank_seen_alone_is_a_note_that_names_the_pid_which_decides():
    """Given one rank's PID, the doctor sees it wait but not why its peer is late: it says which PID
    decides (the launcher's, whose examination shows every rank) instead of choosing 30."""
    from scenarios.clinic.doctor.checks import s30_uneven_batches_across_ranks as check

    alone = _job(IN_BACKWARD, 0.0, 0.0)
    (finding,) = check.running(alone)
    assert finding.level == "note" and "examines every rank" in finding.evidence
    assert re.search(r"doctor --pid (\d+|LAUNCHER) examines", finding.evidence)
    alone.via_launcher = True
    assert [f.level for f in check.running(alone)] == ["risk"]
