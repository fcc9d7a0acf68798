"""Scenario 03: what the runs show beyond their declarations (tests/test_scenarios.py checks
those): the runner's own sampling agrees with the script's, the fixed workers stay a small
fraction of the broken ones while reading the same records, the myths grow like the list, and an
unfrozen full collection would copy more than a fixed worker's epoch."""
import re

import pytest

from conftest import scenario_report


@pytest.fixture(scope="module")
def report():
    return scenario_report("03")


def _objects_read(run):
    return int(re.search(r"read \d+ batches, (\d+) annotated objects", run["output_tail"]).group(1))


def test_broken_growth_is_seen_from_outside_the_script_too(report):
    # The runner samples each worker's USS from another process; it must see the copying as well.
    assert report["variants"]["broken"]["metrics"]["sampled_worker_uss_growth_mb"] >= 80


def test_fixed_workers_stay_small_and_read_the_same_data(report):
    broken, fixed = report["variants"]["broken"], report["variants"]["fixed"]
    assert fixed["metrics"]["worker_uss_growth_mb"] <= broken["metrics"]["worker_uss_growth_mb"] / 5
    assert fixed["metrics"]["sampled_worker_uss_peak_mb"] <= broken["metrics"]["sampled_worker_uss_peak_mb"] / 5
    assert _objects_read(fixed) == _objects_read(broken) > 0


def test_gc_collect_copies_within_20_samples_what_the_list_copies_in_an_epoch(report):
    myth, broken = report["variants"]["myth_gc_collect"], report["variants"]["broken"]
    assert myth["metrics"]["worker_uss_growth_mb"] >= 0.8 * broken["metrics"]["worker_uss_growth_mb"]


def test_numpy_object_array_grows_like_the_list(report):
    myth, broken = report["variants"]["myth_object_array"], report["variants"]["broken"]
    assert myth["metrics"]["worker_uss_growth_mb"] >= 0.8 * broken["metrics"]["worker_uss_growth_mb"]
    assert _objects_read(myth) == _objects_read(broken)


def test_rss_overstates_a_fixed_worker(report):
    # What `top` shows for a worker includes every page still shared with the parent.
    fixed = report["variants"]["fixed"]["metrics"]
    assert fixed["sampled_worker_rss_peak_mb"] >= 5 * fixed["sampled_worker_uss_peak_mb"]


def test_memory_series_follows_both_workers(report):
    # The notebook plots this series: it must hold the epoch, with both workers in it.
    series = report["variants"]["broken"]["memory"]
    assert len(series) >= 5
    assert max(len(sample["workers"]) for _, sample in series) == 2


def test_forkserver_copies_the_list_up_front_instead_of_growing(report):
    # Python 3.14's default start method: the same records cost each worker a full copy at its
    # first batch (over fixed.py's worker), at least what fork's worker grew to by the end, and
    # nothing grows after that, so a growth budget alone no longer catches it.
    figures = report["variants"]["measure_forkserver"]["metrics"]
    assert figures["forkserver_list_copy_mb"] >= figures["fork_broken_growth_mb"]
    assert figures["forkserver_broken_growth_mb"] <= figures["fork_broken_growth_mb"] / 4


def test_an_unfrozen_full_collection_would_copy_more_than_a_fixed_worker_grows(report):
    # Why both scripts call gc.freeze() before forking: one full collection in a fixed worker,
    # nothing frozen, copies several times what that worker's whole epoch of reading adds
    # (torch's and numpy's objects, not records); with the main process's objects frozen, next to nothing.
    collector = report["variants"]["measure_gc_freeze"]["metrics"]
    fixed = report["variants"]["fixed"]["metrics"]
    assert collector["unfrozen_collection_copied_mb"] >= 5 * max(fixed["worker_uss_growth_mb"], 1.0)
    assert collector["frozen_collection_copied_mb"] <= collector["unfrozen_collection_copied_mb"] / 10
