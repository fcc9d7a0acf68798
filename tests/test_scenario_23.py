"""Scenario 23: what the runs show beyond their declarations (tests/test_scenarios.py checks
those): broken.py's worker tokenizes everything, on one thread, and the pinned tokenizers says
nothing about it; the fixed loader yields what num_workers=0 yields; with
TOKENIZERS_PARALLELISM=true the worker waits inside encode_batch; under forkserver both runs
tokenize every sentence with threads of their own."""
import json
import os
import re
import subprocess
import sys

import pytest
import tokenizers

from conftest import REPO_ROOT, scenario_report

FOLDER = REPO_ROOT / "scenarios" / "23_tokenizers_before_fork"
WARNING = ("huggingface/tokenizers: The current process just got forked, after parallelism has already "
           "been used. Disabling parallelism to avoid deadlocks...")
# tokenizers 0.22.2 removed the warning (huggingface/tokenizers#1898); the switch stayed.
WARNS = tuple(int(part) for part in re.findall(r"\d+", tokenizers.__version__)[:3]) < (0, 22, 2)


# The user's own setting of the variable would change what the oracle measures.
ENVIRONMENT = {**{k: v for k, v in os.environ.items() if k != "TOKENIZERS_PARALLELISM"}, "PYTHONPATH": str(REPO_ROOT)}


@pytest.fixture(scope="module")
def report():
    return scenario_report("23")


def test_broken_tokenizes_every_sentence_on_one_thread_and_the_message_depends_on_the_release(report):
    out = report["variants"]["broken"]["output_tail"]
    assert "tokenized 4096 sentences, 292583 tokens" in out  # the data arrives: the loss is silent
    assert out.rstrip().splitlines()[-1].startswith("the worker tokenized on its own thread alone")
    assert "Traceback" not in out
    assert (WARNING in out) == WARNS, f"tokenizers {tokenizers.__version__}"


# The oracle runs in an interpreter of its own: a process whose tokenizers pool has run stays
# marked, and this pytest process forks for other tests.
_ORACLE = """
import json, sys, torch
from torch.utils.data import DataLoader
sys.path.insert(0, sys.argv[1])
import fixed
texts = fixed.make_texts()[:1024]
def ids(num_workers):
    collate = fixed.Tokenize(fixed.build_tokenizer())
    loader = DataLoader(texts, batch_size=256, num_workers=num_workers, collate_fn=collate,
                        **({"multiprocessing_context": "fork"} if num_workers else {}))
    batches = list(loader)
    return [b for b, _ in batches], max(started for _, started in batches)
with_worker, threads = ids(1)   # first: the main process has not run the pool yet
in_main, _ = ids(0)
print(json.dumps({"equal": all(torch.equal(a, b) for a, b in zip(with_worker, in_main)) and len(in_main) == 4,
                  "worker_threads": threads, "distinct_rows": len({tuple(r.tolist()) for b in in_main for r in b})}))
"""


@pytest.mark.full  # an oracle beside the fixed run's declared checks
def test_oracle_fixed_worker_with_its_threads_yields_what_num_workers_0_yields():
    done = subprocess.run([sys.executable, "-c", _ORACLE, str(FOLDER)], capture_output=True, text=True,
                          timeout=120, cwd=REPO_ROOT, env=ENVIRONMENT)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["worker_threads"] >= 1  # the worker's tokenizer really ran on its own pool
    assert result["equal"]
    assert result["distinct_rows"] == 1024  # every sentence differs: the comparison can fail


def test_with_parallelism_forced_on_the_worker_waits_inside_encode_batch(report):
    myth = report["variants"]["myth_parallelism_true"]
    stacks = myth["stacks"]
    encode_line = next(number for number, line in enumerate((FOLDER / "broken.py").read_text().splitlines(), 1)
                       if "self.tokenizer.encode_batch(texts)" in line)
    assert f"Tokenize.__call__ (broken.py:{encode_line})" in stacks, stacks[-3000:]
    assert "_worker_loop (torch/utils/data/_utils/worker.py" in stacks
    assert "batches=" not in myth["output_tail"]  # not one batch came back


def test_a_tokenizer_built_in_the_worker_is_serial_too(report):
    myth = report["variants"]["myth_tokenizer_per_worker"]
    assert myth["metrics"]["worker_tokenizer_threads"] == 0
    assert "Traceback" not in myth["output_tail"]


def test_the_measurement_sees_the_switch_in_every_configuration(report):
    figures = report["variants"]["measure_throughput"]["metrics"]
    for workers in (1, 2):
        assert figures[f"pool_used_{workers}w_threads"] == figures[f"variable_false_{workers}w_threads"] == 0
        assert figures[f"serial_parent_{workers}w_threads"] >= 1
    out = report["variants"]["measure_throughput"]["output_tail"]
    assert len(re.findall(r"^\w+ +[12] worker\(s\) +\d+ sentences/s", out, re.M)) == 6


def test_forkserver_workers_keep_their_threads_and_do_not_hang_with_the_variable_true(report):
    run = report["variants"]["measure_forkserver"]
    out = run["output_tail"]
    assert out.count("tokenized 4096 sentences, 292583 tokens") == 2
    assert out.index("forkserver, TOKENIZERS_PARALLELISM unset: the worker's tokenizer started") < \
        out.index("forkserver, TOKENIZERS_PARALLELISM=true: the worker's tokenizer started")
    assert run["metrics"]["forkserver_true_threads"] >= 1


def test_the_doctor_names_a_pool_used_before_the_fork_in_the_run_and_nothing_else():
    from scenarios.clinic.doctor.checks import s23_tokenizers_before_fork as check

    def run(parent_t=1.0, on=True, method="fork", worker_calls=True):
        pools = [{"lib": "tokenizers", "pid": 10, "t": parent_t, "what": "encode_batch", "on": on}]
        pools += [{"lib": "tokenizers", "pid": 11, "t": 9.0, "what": "encode_batch", "on": True}] * worker_calls
        return {"pools_used": pools, "loaders": [{"pid": 10, "start_method": method}],
                "workers": [{"pid": 11, "ppid": 10, "started": 5.0}]}

    [found] = check.observed(run())
    assert found.level == "risk" and "encode_batch() before its DataLoader forked 1 worker" in found.evidence
    assert check.observed(run(parent_t=6.0)) == []           # used after the workers started
    assert check.observed(run(on=False)) == []               # TOKENIZERS_PARALLELISM=false: no pool ran
    assert check.observed(run(method="spawn")) == []         # a spawned worker starts its own pool
    assert check.observed(run(worker_calls=False)) == []     # workers that never tokenize lose nothing


def test_a_workers_pool_sized_to_the_machine_with_its_loop_thread_is_no_oversubscription():
    from scenarios.clinic.doctor.checks import s21_thread_oversubscription as check

    cores = check.usable_cores()[0]
    one = {"workers": [{"batches": 4, "busy_threads": cores + 1}]}
    assert check.observed(one) == []
    each = max(cores, 2)
    two = {"workers": [{"batches": 4, "busy_threads": each}, {"batches": 4, "busy_threads": each}]}
    assert [f.check for f in check.observed(two)] == ["threads-per-worker"]
