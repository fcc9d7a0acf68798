"""Scenario 25: on a GPU, the genuine texts of both broken variants and explain naming them, the
myth's CUDA contexts; on any machine, the runner's answer without CUDA, explain on what an H200
printed, and the doctor catching each CUDA request (and a tensor on another device) without a GPU."""
import pytest
from gpu_side import assert_cannot_run_here, doctor_findings, gpu_logs, named

from conftest import scenario_report
from scenarios.clinic.doctor.explain import explain_text


def test_without_cuda_the_runner_says_so_in_one_sentence():
    assert_cannot_run_here("25")


@pytest.mark.parametrize("log", gpu_logs("25"), ids=lambda p: p.stem)
def test_explain_names_25_for_what_an_h200_printed(log):
    assert [f.scenario for f in explain_text(log.read_text())] == ["25"]


def test_doctor_finds_cuda_asked_for_in_a_forked_workers_getitem():
    findings = doctor_findings("make_forked_getitem")
    found = next(f for f in findings if f["check"] == "cuda-in-forked-worker")
    assert found["level"] == "risk" and "tests/loaders/gpu_in_workers.py:18" in found["evidence"]
    assert not any(f["scenario"] == "02" for f in findings), "the CPU stand-in's error is no corrupt sample"


def test_doctor_walk_finds_a_tensor_on_another_device():
    # `meta` stands in for CUDA: a tensor whose device is not the CPU, on a machine without a GPU.
    assert ("25", "risk", "cuda-tensor-in-dataset") in named(doctor_findings("make_preloaded_on_device", probe=False))


def test_on_a_gpu_both_failures_are_the_genuine_ones_and_explain_names_them():
    report = scenario_report("25")
    broken, preloaded = report["variants"]["broken"], report["variants"]["broken_preloaded"]
    assert "Caught RuntimeError in DataLoader worker process" in broken["output_tail"]
    assert "in DataLoader worker process" in preloaded["output_tail"]
    for run in (broken, preloaded):
        assert [f.scenario for f in explain_text(run["output_tail"])] == ["25"]
    assert explain_text(report["variants"]["fixed"]["output_tail"]) == []
    assert report["variants"]["myth_spawn"]["metrics"]["workers_holding_cuda"] >= 1


def test_a_build_without_cuda_is_told_without_importing_torch_and_as_torch_tells_it():
    # The runner reads torch/version.py on a CPU build (every skipped GPU test asks): it must agree
    # with torch itself, here in a process that has imported torch.
    import torch

    from scenarios.host import _build_without_cuda, cuda_problem, cuda_problem_here
    assert (_build_without_cuda() == torch.__version__) == (torch.version.cuda is None)
    if torch.version.cuda is None:
        assert cuda_problem() == cuda_problem_here()
