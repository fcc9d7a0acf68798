"""The line between content and engine: scenario scripts import the lab kit and fixes/, never
scenarios/clinic/; every scenario has its doctor check, every check names a scenario."""
import ast
import functools
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from scenarios.clinic.doctor.checks import CHECKS, contract_problems, error_table, name_of

SCENARIO_FOLDERS = sorted(p.name for p in (REPO_ROOT / "scenarios").glob("[0-9][0-9]_*") if p.is_dir())
LAB_KIT = {"scenarios.host", "scenarios.instruments", "scenarios.synthetic_data", "scenarios.object_store",
           "scenarios.gpu_instruments",
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


def test_every_check_names_an_existing_scenario_and_owns_its_fix_texts():
    for check in CHECKS:
        assert name_of(check) in SCENARIO_FOLDERS and name_of(check)[:2] == check.SCENARIO
        assert check.FIXES and all(text.strip() for text in check.FIXES.values())
        parts = ("static", "measured", "running", "ERRORS", "LOG_TEXTS")
        assert any(hasattr(check, part) for part in parts), check.__name__
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
    assert f"--check {folder[:2]}" in section, \
        f"{folder}'s Diagnose section does not show `doctor … --check {folder[:2]}`"
    check = next(c for c in CHECKS if name_of(c) == folder)
    assert ("doctor --pid" in section) == hasattr(check, "running"), "the running-job line and the check disagree"
    in_logs = bool(getattr(check, "ERRORS", ()) or getattr(check, "LOG_TEXTS", ()))
    assert ("scenarios explain" in section) == in_logs, "the log line and the check disagree"


# The engine's shape: checks are plugins that never reach into the engine that runs them, the
# package faces are lazy, and no two engine modules import each other, even inside a function.
ENGINE = REPO_ROOT / "scenarios" / "clinic"
SHARED_READERS = {f"scenarios.clinic.doctor.{name}" for name in
                  ("findings", "evidence", "holdings", "setup", "job", "stacks", "events")} | {"scenarios.clinic.paths"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def _engine_graph() -> dict[str, set[str]]:
    """Module -> the engine modules it imports anywhere in its source (at the top or in a function)."""
    modules = {_module_name(p): p for p in ENGINE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                found |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                          for a in node.names}
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def _circle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle, as the list of modules around it, or []."""
    state, path = {}, []

    def visit(node):
        state[node] = "open"
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = "done"
        path.pop()
        return []
    return next((c for node in sorted(graph) if node not in state and (c := visit(node))), [])


def test_the_engine_has_no_import_circle():
    circle = _circle(_engine_graph())
    assert not circle, "import circle in scenarios/clinic: " + " -> ".join(circle)


def test_the_circle_finder_finds_a_circle():
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _circle({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("check", CHECKS, ids=name_of)
def test_a_check_imports_only_shared_readers(check):
    outside = sorted(_engine_graph()[check.__name__] - SHARED_READERS - {"scenarios.clinic", "scenarios.clinic.doctor"})
    assert not outside, \
        f"{name_of(check)} imports {outside}: a check reads only {sorted(SHARED_READERS)}, the lab kit and fixes/"


@pytest.mark.parametrize("check", CHECKS, ids=name_of)
def test_a_check_keeps_the_contract(check):
    assert contract_problems(check) == []


def test_a_misspelt_hook_breaks_the_contract(tmp_path, monkeypatch):
    (tmp_path / "s99_misspelt.py").write_text('"""99 · a check with a typo."""\n'
                                              'SCENARIO = "99"\nFIXES = {"x": "y"}\n\n\n'
                                              "def mesured(examined, probe):\n    return []\n\n\n"
                                              "def running(examined):\n    return []\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    problems = contract_problems(importlib.import_module("s99_misspelt"))
    assert any("'mesured' is not in the contract" in p for p in problems), problems
    assert any(p.startswith("running(examined) should take (job)") for p in problems), problems


def test_package_faces_load_nothing_until_asked():
    """`import scenarios.clinic.doctor.events` in a probe child and each of its spawned workers
    loads the event names alone, not the 24 checks."""
    code = ("import sys, scenarios.clinic.doctor.events; "
            "print(' '.join(sorted(m for m in sys.modules if m.startswith(('scenarios', 'fixes')))))")
    loaded = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True,
                            check=True).stdout.split()
    assert loaded == ["scenarios", "scenarios.clinic", "scenarios.clinic.doctor", "scenarios.clinic.doctor.events"]
    for face in ENGINE.rglob("__init__.py"):
        if face.parent.name == "checks":
            continue  # the registry: importing it is asking for the checks
        eager = [m for m in _top_level_imports(face) if m.startswith("scenarios") and m != "scenarios.clinic"]
        assert not eager, f"{face.relative_to(REPO_ROOT)} imports {eager} when loaded: use lazy_face"


@pytest.mark.parametrize("face", ["scenarios.clinic.run", "scenarios.clinic.doctor", "scenarios.clinic.workshop"])
def test_every_name_of_a_lazy_face_resolves(face):
    package = importlib.import_module(face)
    for name in package.__getattr__.names:
        assert getattr(package, name) is not None, f"{face}.{name}"


def _top_level_imports(path: Path) -> list[str]:
    return [node.module for node in ast.parse(path.read_text()).body
            if isinstance(node, ast.ImportFrom) and node.module] + \
        [a.name for node in ast.parse(path.read_text()).body if isinstance(node, ast.Import) for a in node.names]


def test_a_misspelt_event_name_is_an_error():
    from scenarios.clinic.doctor.probe import ProbeResult

    probe = ProbeResult(events=[{"event": "first-batch", "bytes": 1}])
    assert probe.first("first-batch") == {"event": "first-batch", "bytes": 1}
    with pytest.raises(ValueError, match="no probe event 'first_batch'"):
        probe.first("first_batch")


def what_a_scenario_lacks(root: Path, folder: str, registered: set[str]) -> list[str]:
    """The files a scenario folder adds or edits (scenarios/MAP.md), those missing named."""
    number = folder[:2]
    needs = [f"scenarios/{folder}/{name}" for name in ("README.md", "broken.py", "fixed.py", "scenario.toml")]
    needs += [f"scenarios/clinic/doctor/checks/s{folder}.py", f"notebooks/{folder}.ipynb",
              f"tests/test_scenario_{number}.py"]
    missing = [name for name in needs if not (root / name).is_file()]
    if folder not in registered:
        missing.append("its check in scenarios/clinic/doctor/checks/__init__.py's CHECKS")
    return missing


@pytest.mark.parametrize("folder", SCENARIO_FOLDERS)
def test_a_scenario_folder_has_all_it_needs(folder):
    missing = what_a_scenario_lacks(REPO_ROOT, folder, {name_of(c) for c in CHECKS})
    assert not missing, f"scenarios/{folder} lacks: {', '.join(missing)} (scenarios/MAP.md lists what a scenario adds)"


def test_a_new_scenario_folder_alone_is_told_what_it_lacks(tmp_path):
    (tmp_path / "scenarios" / "99_new_failure").mkdir(parents=True)
    (tmp_path / "scenarios" / "99_new_failure" / "broken.py").write_text("")
    missing = what_a_scenario_lacks(tmp_path, "99_new_failure", {name_of(c) for c in CHECKS})
    assert missing == ["scenarios/99_new_failure/README.md", "scenarios/99_new_failure/fixed.py",
                       "scenarios/99_new_failure/scenario.toml", "scenarios/clinic/doctor/checks/s99_new_failure.py",
                       "notebooks/99_new_failure.ipynb", "tests/test_scenario_99.py",
                       "its check in scenarios/clinic/doctor/checks/__init__.py's CHECKS"]
