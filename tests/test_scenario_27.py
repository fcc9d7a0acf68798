"""Scenario 27: on a GPU, the pin thread's genuine error and explain naming it, the wrong early
reads and the pinned batches of the fix; on any machine, the runner's answer without CUDA,
explain on what an H200 printed, and the doctor following a collate_fn's CUDA batch into
pin_memory=True without a GPU."""
import pytest
from gpu_side import assert_cannot_run_here, doctor_findings, gpu_logs, named, outputs_kept

from scenarios.clinic.doctor.explain import explain_text


def test_without_cuda_the_runner_says_so_in_one_sentence():
    assert_cannot_run_here("27")


@pytest.mark.parametrize("log", gpu_logs("27"), ids=lambda p: p.stem)
def test_explain_names_27_for_what_an_h200_printed(log):
    assert [f.scenario for f in explain_text(log.read_text())] == ["27"]


def test_doctor_finds_pinning_over_a_cuda_batch():
    findings = doctor_findings("make_pinned_gpu_collate")
    found = next(f for f in findings if f["check"] == "pin-cuda-batch")
    assert found["level"] == "risk" and "collate_fn asked for CUDA at tests/loaders/gpu_in_workers.py:24" \
        in found["evidence"]
    assert ("02", "risk", "worker-error") not in named(findings)


def test_on_a_gpu_the_pin_thread_fails_and_the_fix_pins():
    with outputs_kept("27") as runs:  # the H200 run failed here once, and its output was not kept
        assert "Caught RuntimeError in pin memory thread for device 0." in runs["broken"]["output_tail"]
        assert [f.scenario for f in explain_text(runs["broken"]["output_tail"])] == ["27"]
        assert runs["broken_read_before_sync"]["metrics"]["reads_wrong"] >= 1
        assert runs["fixed"]["metrics"]["pinned_batches"] == 8
