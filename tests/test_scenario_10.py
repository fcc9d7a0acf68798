"""Scenario 10: broken blows its memory budget, fixed fits what it planned, the count and the gc myth hold as measured.

tests/test_scenarios.py checks every declared outcome, evidence and bound; this file checks
what is particular to memory in flight: the plan, the oracle, the comparisons between
broken and fixed, the count of batches in /dev/shm, and the cost of the gc.collect() advice.
"""
import re

from torch.utils.data import DataLoader

from conftest import load_scenario_module, scenario_report
from fixes.memory_in_flight import batches_in_flight

BUDGET_MB = 128


def _order_checksum_without_workers():
    """The oracle: what num_workers=0 yields, folded the way the scripts fold it."""
    broken = load_scenario_module("10_prefetch_memory", "broken")
    samples, checksum = 0, 0
    for images, _ in DataLoader(broken.CropDataset(), batch_size=broken.BATCH, num_workers=0):
        for index in (images[:, 0, 0, 0] * broken.IMAGES).round().long().tolist():
            checksum += samples * index
            samples += 1
    return samples, checksum


def test_broken_blows_the_budget_without_a_word_from_pytorch():
    broken = scenario_report("10")["variants"]["broken"]
    assert "Traceback" not in broken["output_tail"]
    assert broken["metrics"]["measured_peak_mb"] >= 1.25 * BUDGET_MB


def test_fixed_lowers_prefetch_and_stays_under_its_prediction():
    fixed = scenario_report("10")["variants"]["fixed"]
    assert "in flight: 2 workers x prefetch_factor 4 + 2 = 10 batches of 6.00 MiB" in fixed["output_tail"]
    assert "asked for 2 x 16 = 34 batches" in fixed["output_tail"]
    figures = fixed["metrics"]
    assert figures["measured_peak_mb"] <= BUDGET_MB
    # The prediction is an upper bound, and not a loose one.
    assert 0.5 * figures["predicted_peak_mb"] <= figures["measured_peak_mb"] <= figures["predicted_peak_mb"]


def test_broken_and_fixed_read_the_same_data_as_num_workers_0():
    broken, fixed = (scenario_report("10")["variants"][v]["metrics"] for v in ("broken", "fixed"))
    samples, checksum = _order_checksum_without_workers()
    assert broken["samples"] == fixed["samples"] == samples == 2400
    assert broken["order_checksum"] == fixed["order_checksum"] == checksum


def test_prefetch_depth_is_what_costs_the_memory():
    broken, fixed = (scenario_report("10")["variants"][v]["metrics"] for v in ("broken", "fixed"))
    assert broken["measured_peak_mb"] >= 1.5 * fixed["measured_peak_mb"]
    assert broken["shm_peak_mb"] >= 2.5 * fixed["shm_peak_mb"]
    # The workers' own memory does not depend on the prefetch depth.
    assert abs(broken["worker_peak_mb"] - fixed["worker_peak_mb"]) <= 15


def test_grid_counts_workers_x_prefetch_plus_2_batches_in_shm():
    figures = scenario_report("10")["variants"]["measure_grid"]["metrics"]
    cells = [k[len("shm_batches_"):] for k in figures if k.startswith("shm_batches_")]
    assert len(cells) == 8
    for cell in cells:
        workers, prefetch, _ = map(int, re.fullmatch(r"w(\d+)_p(\d+)_b(\d+)", cell).groups())
        assert figures[f"shm_batches_{cell}"] <= batches_in_flight(workers, prefetch) + 0.1, cell
    # At the deepest settings the count is reached: more than workers x prefetch_factor + 1 at once.
    assert figures["shm_batches_w1_p8_b32"] > 1 * 8 + 1
    assert figures["shm_batches_w2_p8_b32"] > 2 * 8 + 1
    # Deeper prefetch of big batches costs what the batches weigh: 14 more of 6 MiB.
    assert figures["measured_peak_mb_w2_p8_b32"] - figures["measured_peak_mb_w2_p1_b32"] >= 50


def test_gc_collect_in_getitem_frees_nothing_and_costs_time_and_memory():
    figures = scenario_report("10")["variants"]["myth_gc_collect"]["metrics"]
    assert figures["gc_s_per_batch"] >= 5 * figures["plain_s_per_batch"]
    assert figures["gc_worker_peak_mb"] >= figures["plain_worker_peak_mb"] + 10
    assert figures["gc_measured_peak_mb"] >= figures["plain_measured_peak_mb"] + 20
