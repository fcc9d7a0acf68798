"""make suite-report: each tier's tests and seconds from the junit file pytest wrote, the budget of
make test held by the report (not by a timed test), and a run stored as data with no path in it."""
import json

from suite_report import TEST_BUDGET_S, main, read_run

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="1"
 skipped="1" tests="3" time="{wall}" timestamp="2026-11-29T06:00:00" hostname="laptop">
<testcase classname="tests.test_a" name="test_one[x]@03" time="12.5"><properties>
 <property name="tier" value="{tier}"/></properties></testcase>
<testcase classname="tests.test_a" name="test_two@test_a.py" time="0.5"><properties>
 <property name="tier" value="test"/></properties><failure message="/home/someone/repo/tests/test_a.py:9"/></testcase>
<testcase classname="tests.test_b" name="test_three" time="0.0"><properties>
 <property name="tier" value="test"/></properties><skipped message="make test-full"/></testcase>
</testsuite></testsuites>"""


def test_tiers_seconds_and_outcomes_come_from_the_junit_file(tmp_path, capsys):
    run = tmp_path / "full.xml"
    run.write_text(JUNIT.format(wall=600, tier="full"))
    suite, tests = read_run(run)
    assert suite["time"] == "600" and len(tests) == 3
    assert tests[0] == (12.5, "full", "passed", "tests/test_a.py::test_one[x]")
    assert tests[1][1:] == ("test", "failure", "tests/test_a.py::test_two")
    assert main([str(run)]) == 0  # a full run is not held to make test's budget
    said = capsys.readouterr().out
    assert "full        1       12" in said and "test        2        0" in said


def test_make_tests_budget_is_the_reports_and_a_stored_run_holds_no_path(tmp_path, monkeypatch, capsys):
    import suite_report

    run = tmp_path / "test.xml"
    run.write_text(JUNIT.format(wall=TEST_BUDGET_S + 1, tier="test"))
    assert main([str(run)]) == 1 and "OVER its budget" in capsys.readouterr().out
    run.write_text(JUNIT.format(wall=TEST_BUDGET_S - 1, tier="test"))
    monkeypatch.setattr(suite_report, "HERE", tmp_path)
    assert main([str(run), "--store"]) == 0
    stored = (tmp_path / "suite_runs" / "test.json").read_text()
    assert "/home/" not in stored and "laptop" not in stored
    assert json.loads(stored)["tests"][0] == [12.5, "test", "passed", "tests/test_a.py::test_one[x]"]
    assert main([str(tmp_path / "suite_runs" / "test.json")]) == 0


def test_no_run_and_a_file_that_is_not_junit_are_bad_input(tmp_path, capsys):
    assert main([str(tmp_path / "missing.xml")]) == 2
    (tmp_path / "bad.xml").write_text("not xml")
    assert main([str(tmp_path / "bad.xml")]) == 2 and "Traceback" not in capsys.readouterr().err
