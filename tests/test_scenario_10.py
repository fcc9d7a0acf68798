"""Scenario 10: broken blows its memory budget, fixed fits it, the prediction and the gc myth hold as measured."""
import re

import pytest
from torch.utils.data import DataLoader

from conftest import load_scenario_module, run_scenario_json

BUDGET_MB = 128


@pytest.fixture(scope="module")
def report():
    return run_scenario_json("10", "all")


def _order_checksum_without_workers():
    """The oracle: what num_workers=0 yields, folded the way the scripts fold it."""
    broken = load_scenario_module("10_prefetch_memory", "broken")
    samples, checksum = 0, 0
    for images, _ in DataLoader(broken.CropDataset(), batch_size=broken.BATCH, num_workers=0):
        for index in (images[:, 0, 0, 0] * broken.IMAGES).round().long().tolist():
            checksum += samples * index
            samples += 1
    return samples, checksum


def test_broken_blows_the_budget_silently(report):
    broken = report["variants"]["broken"]
    assert report["reproduced"], broken["breaches"]
    assert broken["outcome"] == "error" and broken["exit_code"] == 1
    assert re.search(r"peaked at \d+ MiB \(main \+ workers \+ /dev/shm\), over the budget of 128 MiB",
                     broken["evidence"])
    # PyTorch itself says nothing: the damage is only in the measurement.
    assert "Traceback" not in broken["output_tail"]
    figures = broken["metrics"]
    assert figures["samples"] == 2400
    assert figures["measured_peak_mb"] >= 1.25 * BUDGET_MB
    # Most of it is batches waiting in /dev/shm: 34 batches of 6 MiB when full.
    assert figures["shm_peak_mb"] >= 100


def test_fixed_fits_the_budget_by_the_computed_choice(report):
    fixed = report["variants"]["fixed"]
    assert report["fixed"], fixed["breaches"]
    assert fixed["outcome"] == "completed" and fixed["exit_code"] == 0
    assert "memory budget: 2 workers x prefetch_factor 3 = 106 MiB predicted" in fixed["output_tail"]
    assert "asked for 2 x 16 = 262 MiB" in fixed["output_tail"]
    figures = fixed["metrics"]
    assert figures["measured_peak_mb"] <= BUDGET_MB
    # The prediction is an upper bound, and not a loose one.
    assert 0.5 * figures["predicted_peak_mb"] <= figures["measured_peak_mb"] <= figures["predicted_peak_mb"]


def test_broken_and_fixed_read_the_same_data_as_num_workers_0(report):
    broken, fixed = (report["variants"][v]["metrics"] for v in ("broken", "fixed"))
    samples, checksum = _order_checksum_without_workers()
    assert broken["samples"] == fixed["samples"] == samples == 2400
    assert broken["order_checksum"] == fixed["order_checksum"] == checksum


def test_prefetch_depth_is_what_costs_the_memory(report):
    broken, fixed = (report["variants"][v]["metrics"] for v in ("broken", "fixed"))
    assert broken["measured_peak_mb"] >= 1.5 * fixed["measured_peak_mb"]
    assert broken["shm_peak_mb"] >= 2.5 * fixed["shm_peak_mb"]
    # The workers' own memory does not depend on the prefetch depth.
    assert abs(broken["worker_peak_mb"] - fixed["worker_peak_mb"]) <= 15


def test_prediction_holds_over_the_grid(report):
    grid = report["variants"]["measure_grid"]
    assert grid["as_expected"], grid["breaches"]
    figures = grid["metrics"]
    names = [k[len("measured_peak_mb_"):] for k in figures if k.startswith("measured_peak_mb_")]
    assert len(names) == 8
    for name in names:
        measured, predicted = figures[f"measured_peak_mb_{name}"], figures[f"predicted_peak_mb_{name}"]
        assert 0.5 * predicted <= measured <= 1.05 * predicted, name
    # Deeper prefetch of big batches costs what the batches weigh: 7 x 2 more, 6 MiB each.
    assert figures["measured_peak_mb_w2_p8_b32"] - figures["measured_peak_mb_w2_p1_b32"] >= 50
    # Seed 002's count (num_workers x prefetch_factor batches) falls short everywhere.
    assert figures["seed_formula_lowest_ratio"] > 1.1


def test_gc_collect_in_getitem_frees_nothing_and_costs_memory(report):
    myth = report["variants"]["myth_gc_collect"]
    assert myth["as_expected"], myth["breaches"]
    figures = myth["metrics"]
    assert figures["gc_calls"] == 64
    assert figures["gc_objects_freed_later_calls"] == 0
    assert figures["gc_ms_per_call"] >= 5
    assert figures["gc_worker_peak_mb"] >= figures["plain_worker_peak_mb"] + 10
    assert figures["gc_measured_peak_mb"] >= figures["plain_measured_peak_mb"] + 20


def test_memory_series_has_main_and_both_workers(report):
    series = report["variants"]["broken"]["memory"]
    assert len(series) >= 5
    assert max(len(sample["workers"]) for _, sample in series) == 2
    assert all(sample["main"] > 0 for _, sample in series)
