"""Scenario 03: broken must grow, fixed must not, and the myths must hold as measured."""
import re

import pytest

from conftest import run_scenario_json


@pytest.fixture(scope="module")
def report():
    return run_scenario_json("03", "all")


def _objects_read(run):
    return int(re.search(r"read \d+ batches, (\d+) annotated objects", run["output_tail"]).group(1))


def test_broken_workers_grow_by_copy_on_read(report):
    broken = report["variants"]["broken"]
    assert report["reproduced"], broken["breaches"]
    assert broken["outcome"] == "error"
    assert broken["metrics"]["worker_uss_growth_mb"] >= 100
    # The runner's own sampling, taken from outside the script, must agree.
    assert broken["metrics"]["sampled_worker_uss_growth_mb"] >= 80


def test_fixed_workers_stay_small_and_read_the_same_data(report):
    broken, fixed = report["variants"]["broken"], report["variants"]["fixed"]
    assert report["fixed"], fixed["breaches"]
    assert fixed["outcome"] == "completed" and fixed["exit_code"] == 0
    assert fixed["metrics"]["worker_uss_growth_mb"] <= broken["metrics"]["worker_uss_growth_mb"] / 5
    assert fixed["metrics"]["sampled_worker_uss_peak_mb"] <= broken["metrics"]["sampled_worker_uss_peak_mb"] / 5
    assert _objects_read(fixed) == _objects_read(broken) > 0


def test_gc_collect_in_getitem_does_not_stop_the_growth(report):
    myth = report["variants"]["myth_gc_collect"]
    assert myth["as_expected"], myth["breaches"]
    assert myth["metrics"]["worker_uss_growth_mb"] >= 100
    assert myth["metrics"]["ms_per_sample"] >= 50


def test_numpy_object_array_grows_like_the_list(report):
    myth = report["variants"]["myth_object_array"]
    broken = report["variants"]["broken"]
    assert myth["as_expected"], myth["breaches"]
    assert myth["metrics"]["worker_uss_growth_mb"] >= 0.8 * broken["metrics"]["worker_uss_growth_mb"]


def test_rss_overstates_a_fixed_worker(report):
    # What `top` shows for a worker includes every page still shared with the parent.
    fixed = report["variants"]["fixed"]["metrics"]
    assert fixed["sampled_worker_rss_peak_mb"] >= 5 * fixed["sampled_worker_uss_peak_mb"]


def test_memory_series_has_main_and_both_workers(report):
    series = report["variants"]["broken"]["memory"]
    assert len(series) >= 5
    assert max(len(sample["workers"]) for _, sample in series) == 2
    assert all(sample["main"] > 0 for _, sample in series)
