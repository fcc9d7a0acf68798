"""Scenario 07: without workers the model mostly waits; with them it runs near the bound."""
import re

import pytest

from conftest import run_scenario_json


@pytest.fixture(scope="module")
def report():
    return run_scenario_json("07", "broken", "fixed")


def _steps(run):
    return [(float(w), float(c)) for w, c in
            re.findall(r"step +\d+: waited +([\d.]+) ms, computed +([\d.]+) ms", run["output_tail"])]


def test_broken_waits_for_every_batch(report):
    broken = report["variants"]["broken"]
    assert report["reproduced"], broken["breaches"]
    assert "data loading is the bottleneck" in broken["evidence"]
    steps = _steps(broken)[1:]
    assert len(steps) == 29
    # Four sequential requests of 20 ms each: no step can wait less than 80 ms.
    assert min(waited for waited, _ in steps) >= 80
    assert broken["metrics"]["utilisation"] < 0.5


def test_fixed_reaches_the_bound(report):
    fixed, broken = report["variants"]["fixed"], report["variants"]["broken"]
    assert report["fixed"], fixed["breaches"]
    assert fixed["metrics"]["ratio_to_bound"] >= 0.9
    assert fixed["metrics"]["throughput_per_s"] >= 2 * broken["metrics"]["throughput_per_s"]
    assert fixed["metrics"]["bound_per_s"] > 0
    # Steady state: the median step does not wait for data at all (well under one request).
    waits = sorted(waited for waited, _ in _steps(fixed)[1:])
    assert waits[len(waits) // 2] < 5
