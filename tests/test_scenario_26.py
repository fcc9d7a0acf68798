"""Scenario 26: on a GPU, the contexts the broken workers hold and the fixed ones do not, the
CudaIPCTypes warning and explain naming it; on any machine, the runner's and `make doctor`'s
answers without CUDA, explain on what an H200 printed, and the doctor naming CUDA asked for by
spawn workers (worker_init_fn and __getitem__) without a GPU."""
import subprocess
import sys

import pytest
from gpu_side import assert_cannot_run_here, doctor_findings, gpu_logs

from conftest import REPO_ROOT, scenario_report
from scenarios.clinic.doctor.explain import explain_text
from scenarios.host import cuda_problem


def test_without_cuda_the_runner_says_so_in_one_sentence():
    assert_cannot_run_here("26")


def test_make_doctor_lists_the_gpu_scenarios_as_needing_a_cuda_gpu():
    if cuda_problem() is None:
        pytest.skip("this machine has a CUDA device")
    done = subprocess.run([sys.executable, "-m", "scenarios", "doctor"], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=180)
    lines = done.stdout.splitlines()
    for number in ("25", "26", "27", "28"):
        row = next(i for i, line in enumerate(lines) if line.strip().startswith(f"✘ {number} "))
        assert "needs a CUDA GPU" in lines[row + 1], lines[row]


@pytest.mark.parametrize("log", gpu_logs("26"), ids=lambda p: p.stem)
def test_explain_names_26_for_what_an_h200_printed(log):
    assert [f.scenario for f in explain_text(log.read_text())] == ["26"]


def test_a_workers_out_of_memory_is_26_and_a_models_own_is_nothing():
    worker = ("Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\n"
              "  File \"…/site-packages/torch/utils/data/dataloader.py\", line 741, in __next__\n"
              "torch.AcceleratorError: Caught AcceleratorError in DataLoader worker process 2.\n"
              "Original Traceback (most recent call last):\n  File \"train.py\", line 5, in pick_gpu\n"
              "torch.AcceleratorError: CUDA error: out of memory\n")
    model = worker.replace("Caught AcceleratorError in DataLoader worker process 2.",
                           "CUDA out of memory. Tried to allocate 2.00 GiB")
    assert [f.scenario for f in explain_text(worker)] == ["26"]
    assert explain_text(model.split("Original Traceback")[0]) == []


def test_doctor_names_each_cuda_request_of_spawn_workers():
    found = next(f for f in doctor_findings("make_spawn_worker_init") if f["check"] == "cuda-context-per-worker")
    assert found["level"] == "risk"
    assert "worker_init_fn asked for CUDA at tests/loaders/gpu_in_workers.py:28 (torch.cuda.set_device())" \
        in found["evidence"]
    assert "building a sample asked for CUDA at tests/loaders/gpu_in_workers.py:18" in found["evidence"]


def test_on_a_gpu_broken_workers_hold_contexts_and_fixed_ones_none():
    runs = scenario_report("26")["variants"]
    assert runs["broken"]["metrics"]["workers_holding_cuda"] >= 1
    assert runs["fixed"]["metrics"]["workers_holding_cuda"] == 0
    assert [f.scenario for f in explain_text(runs["broken_return_cuda"]["output_tail"])] == ["26"]
    assert runs["measure_sigkill_leftovers"]["metrics"]["with_fix_workers_left"] == 0
