"""The checks' HEALTHY figures come from recorded runs (scenarios/clinic/doctor/healthy.py), never
from a hand: every field a text names is filled, the records cover the well-built loaders and every
check, and a finding in a record shows in the rendered text."""
import json

import pytest
from test_doctor_public_loaders import WELL_BUILT

from scenarios.clinic.doctor import checks, healthy
from scenarios.clinic.doctor.findings import finder


def test_every_check_renders_its_healthy_text_from_the_records():
    for check in checks.CHECKS:
        text = healthy.text(check)
        assert "{" not in text and healthy.NOT_MEASURED not in text, (check.SCENARIO, text)


def test_the_records_are_of_the_well_built_loaders_with_every_check_judged():
    loaders, jobs = healthy.records(healthy.LOADERS), healthy.records(healthy.JOBS)
    assert {run["loader"] for run in loaders} == set(WELL_BUILT), "the corpus changed: record its runs again"
    assert {run["busy"] for run in loaders} == {False, True}, "quiet and busy runs both"
    present = sorted(check.SCENARIO for check in checks.CHECKS)
    assert all(run["checks"] == present for run in loaders + jobs), "a check without runs: record them again"
    assert all(run["machine"]["cores"] for run in loaders + jobs)


def _record(path, runs: list[dict]) -> None:
    path.write_text("".join(json.dumps(run) + "\n" for run in runs))


@pytest.fixture
def records(tmp_path, monkeypatch):
    """Point healthy.py at two record files of the test's own; returns the function that writes them."""
    loaders, jobs = tmp_path / "loaders.jsonl", tmp_path / "jobs.jsonl"
    monkeypatch.setattr(healthy, "LOADERS", loaders)
    monkeypatch.setattr(healthy, "JOBS", jobs)
    healthy.records.cache_clear()
    yield lambda loader_runs, job_runs: (_record(loaders, loader_runs), _record(jobs, job_runs))
    healthy.records.cache_clear()


def _run(loader: str, findings: list, busy=False, growth=0.5, checks=("01", "03")) -> dict:
    return {"loader": loader, "busy": busy, "findings": findings, "checks": list(checks),
            "margins": {healthy.GROWTH: growth}, "machine": {"cores": 2}}


def test_a_finding_in_the_records_is_counted_and_a_check_they_never_ran_says_so(records):
    records([_run("a", [["risk", "03", "copy-on-read"]], growth=0.9), _run("a", [], busy=True, growth=0.7),
             _run("b", [["note", "03", "copy-on-read"]], growth=0.1)],
            [{"job": "j", "findings": [["risk", "01", "hang"]], "crossed": True, "checks": ["01"], "machine": {}}])
    check = type("Check", (), {"SCENARIO": "03", "HEALTHY": "{loaders}. {growth}. {jobs}"})
    text = healthy.text(check)
    assert text.startswith("1 risk in 3 runs of the"), text
    assert "(2 quiet, 1 with one core kept busy; a note on 1 of them)" in text
    assert "at most 0.900 of the bound (a, its 2 runs: mean 0.800, sd 0.100; the bound 2.0 sd away" in text
    assert text.endswith(healthy.NOT_MEASURED), text   # the job's examination did not run 03's check
    check.SCENARIO = "01"
    assert "doctor --pid: 1 finding in 1 examination of 1 healthy job" in healthy.text(check)
    check.SCENARIO = "35"
    assert healthy.text(check).startswith(healthy.NOT_MEASURED)


def test_a_field_no_figure_has_is_named():
    check = type("Check", (), {"SCENARIO": "03", "HEALTHY": "{loader}"})
    with pytest.raises(KeyError, match="names {loader}; the fields are loaders"):
        healthy.text(check)


def test_the_skeleton_of_a_check_names_a_field_healthy_fills():
    from scenarios.clinic import skeleton

    namespace = {"finder": finder}
    exec(skeleton._check("99").split("\n", 2)[2], namespace)   # past its docstring and import
    assert "{loaders}" in namespace["HEALTHY"]
