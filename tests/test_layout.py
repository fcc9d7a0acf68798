"""The line between content and engine: scenario scripts import the lab kit and fixes/, never
scenarios/clinic/; every scenario has its doctor check, every check names a scenario."""
import ast
import re
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from scenarios.clinic.doctor.checks import CHECKS, error_table, name_of

SCENARIO_FOLDERS = sorted(p.name for p in (REPO_ROOT / "scenarios").glob("[0-9][0-9]_*") if p.is_dir())
LAB_KIT = {"scenarios.host", "scenarios.instruments", "scenarios.synthetic_data", "scenarios.object_store",
           "scenarios.memory_cgroup", "scenarios.remote_training"}


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


@pytest.mark.parametrize("folder", SCENARIO_FOLDERS)
def test_scenario_scripts_import_no_engine(folder):
    for script in (REPO_ROOT / "scenarios" / folder).glob("*.py"):
        engine = sorted(m for m in _imports(script) if m.startswith("scenarios.") and m not in LAB_KIT)
        assert not engine, f"{script.relative_to(REPO_ROOT)} imports the engine: {engine}"


def test_fixes_import_no_project_module():
    for fix in (REPO_ROOT / "fixes").glob("*.py"):
        project = sorted(m for m in _imports(fix) if m.split(".")[0] in ("scenarios", "fixes"))
        assert not project, f"{fix.relative_to(REPO_ROOT)} imports {project}: a fix is one file a user copies"


@pytest.mark.parametrize("folder", SCENARIO_FOLDERS)
def test_every_scenario_has_its_check(folder):
    assert folder in {name_of(check) for check in CHECKS}, \
        f"scenarios/{folder} has no check module scenarios/clinic/doctor/checks/s{folder}.py in CHECKS"


def test_every_check_names_an_existing_scenario_and_owns_its_fix_texts():
    for check in CHECKS:
        assert name_of(check) in SCENARIO_FOLDERS and name_of(check)[:2] == check.SCENARIO
        assert check.FIXES and all(text.strip() for text in check.FIXES.values())
        assert any(hasattr(check, part) for part in ("static", "measured", "running", "ERRORS", "LOG_TEXTS")), check.__name__
    for pattern, check, name in error_table():
        re.compile(pattern)
        assert name in check.FIXES, f"{check.__name__}: error text {pattern!r} names {name}, which has no fix text"


def test_the_error_table_ends_with_its_catch_all():
    *_, (pattern, check, name) = error_table()
    assert pattern == "" and check.SCENARIO == "02"
    assert all(p for p, _, _ in error_table()[:-1]), "only the last entry may match everything"


@pytest.mark.parametrize("folder", SCENARIO_FOLDERS)
def test_readme_names_its_check_and_the_entry_points_it_has(folder):
    readme = (REPO_ROOT / "scenarios" / folder / "README.md").read_text()
    section = readme.split("## Diagnose it in your own code", 1)[-1].split("\n## ", 1)[0]
    assert f"--check {folder[:2]}" in section, f"{folder}'s Diagnose section does not show `doctor … --check {folder[:2]}`"
    check = next(c for c in CHECKS if name_of(c) == folder)
    assert ("doctor --pid" in section) == hasattr(check, "running"), "the running-job line and the check disagree"
    in_logs = bool(getattr(check, "ERRORS", ()) or getattr(check, "LOG_TEXTS", ()))
    assert ("scenarios explain" in section) == in_logs, "the log line and the check disagree"
