"""Scenario 28: on a GPU, the fixed loop keeps the GPU busier than the broken one on the same
step; on any machine, the runner's answer without CUDA, and no note from the doctor for a loader
examined by a process that has not used CUDA."""
from gpu_side import assert_cannot_run_here, doctor_findings

from conftest import scenario_report


def test_without_cuda_the_runner_says_so_in_one_sentence():
    assert_cannot_run_here("28")


def test_no_note_where_this_process_has_not_used_cuda():
    assert not [f for f in doctor_findings("make_pinned_gpu_collate", probe=False) if f["scenario"] == "28"]


def test_on_a_gpu_fixed_keeps_the_gpu_busier_on_the_same_step():
    runs = scenario_report("28")["variants"]
    broken, fixed = runs["broken"]["metrics"], runs["fixed"]["metrics"]
    assert fixed["gpu_busy_share"] > broken["gpu_busy_share"]
    assert abs(fixed["step_alone_ms"] - broken["step_alone_ms"]) / broken["step_alone_ms"] < 0.5
