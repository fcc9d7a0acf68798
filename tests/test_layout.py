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

from scenarios.clinic.doctor.checks import CHECKS, CONTRACT, contract_problems, error_table, name_of, ordered
from scenarios.clinic.skeleton import MARK, unwritten

SCENARIO_FOLDERS = sorted(p.name for p in (REPO_ROOT / "scenarios").glob("[0-9][0-9]_*") if p.is_dir())


def _lab_kit(top: Path) -> set[str]:
    """Every module at the top of scenarios/, and every package there but the engine, with its modules
    (scenarios/MAP.md names each, test below)."""
    modules = [p for p in top.glob("*.py") if not p.stem.startswith("__")]
    packages = [face.parent for face in top.glob("*/__init__.py") if face.parent.name != "clinic"]
    modules += [p for package in packages for p in package.glob("*.py")]
    return {".".join(p.relative_to(top.parent).with_suffix("").parts).removesuffix(".__init__") for p in modules}


LAB_KIT = _lab_kit(REPO_ROOT / "scenarios")


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


def test_the_map_names_every_module_of_the_lab_kit():
    row = next(line for line in (REPO_ROOT / "scenarios" / "MAP.md").read_text().splitlines()
               if line.startswith("| **the lab kit**"))
    # a module `host.py`; a package `instruments/` and each of its modules, `instruments/memory.py`
    names = re.findall(r"`(?:scenarios/)?(\w+(?:/\w+)*)(?:\.py|/)`", row)
    named = {"scenarios." + name.replace("/", ".") for name in names}
    assert named == LAB_KIT, \
        f"scenarios/MAP.md's lab kit row lacks {sorted(LAB_KIT - named)}, names {sorted(named - LAB_KIT)}"


def test_the_readme_shows_every_command_and_no_other():
    from scenarios.clinic.cli import COMMANDS

    shown = set()
    for text in ((REPO_ROOT / "README.md").read_text(), (REPO_ROOT / "Makefile").read_text()):
        shown |= {name for names in re.findall(r"python -m scenarios ([\w|-]+)", text) for name in names.split("|")}
    assert set(COMMANDS) <= shown, f"README.md shows no `python -m scenarios {sorted(set(COMMANDS) - shown)}`"
    assert shown - {"-h"} <= set(COMMANDS), f"README.md or the Makefile runs {sorted(shown - set(COMMANDS))}"


def test_list_imports_no_check_and_no_other_commands_module():
    code = ("import sys, io, contextlib; from scenarios.clinic import cli\n"
            "with contextlib.redirect_stdout(io.StringIO()): status = cli.main(['list'])\n"
            "print(status, *sorted(m for m in sys.modules if m.startswith('scenarios')))")
    status, *loaded = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True,
                                     check=True).stdout.split()
    from scenarios.clinic.cli import COMMANDS

    assert status == "0" and "scenarios.clinic.run.commands" in loaded
    assert not [m for m in loaded if m.startswith("scenarios.clinic.doctor")], loaded
    others = {c.module for c in COMMANDS.values()} - {COMMANDS["list"].module}
    assert not others & set(loaded), f"`list` imports {sorted(others & set(loaded))}"


def test_each_environment_variable_of_the_clinic_is_named_once():
    """A CLINIC_* variable the engine or the lab kit reads is a constant there; scripts, checks and
    tests import that constant instead of writing its name again."""
    quoted = re.compile(r"""["'](CLINIC_[A-Z_]+)["']""")
    files = [p for p in (REPO_ROOT / "scenarios").rglob("*.py")] + list((REPO_ROOT / "tests").rglob("*.py"))
    where = {}
    for path in files:
        for name in quoted.findall(path.read_text(encoding="utf-8")):
            where.setdefault(name, []).append(str(path.relative_to(REPO_ROOT)))
    defined = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert not defined, f"written in more than one file: {defined}"


def test_no_count_of_the_checks_or_scenarios_is_written_by_hand():
    """A count in prose ("24 checks") outlived the 28th check: a count is derived or not written."""
    counted = re.compile(r"\b(?:the|all|every one of the) (\d+) (?:doctor )?(checks|scenarios)\b", re.I)
    texts = [REPO_ROOT / name for name in ("README.md", "DEVELOPERS.md", "scenarios/MAP.md", "scenarios/WORKSHOP.md")]
    texts += list(ENGINE.rglob("*.py")) + list((REPO_ROOT / "tests").glob("*.py"))
    wrong = [f"{path.relative_to(REPO_ROOT)}: {m.group(0)}" for path in texts if path.is_file()
             for m in counted.finditer(path.read_text(encoding="utf-8"))
             if int(m.group(1)) != len(CHECKS if m.group(2).lower() == "checks" else SCENARIO_FOLDERS)]
    assert not wrong, f"counts written by hand, and wrong: {wrong}"


def test_the_count_of_well_built_public_loaders_is_the_corpus_own():
    """The front page, scenarios/HEALTHY.md (the checks' HEALTHY, rendered) and the tests cite "the N
    well-built public loaders": N is tests/test_doctor_public_loaders.py's WELL_BUILT, the set
    tests/loaders/false_alarms.py runs."""
    from test_doctor_public_loaders import WELL_BUILT

    counted = re.compile(r"\bthe (\d+) well-built\b")   # "public loaders" often on the next line
    texts = [REPO_ROOT / "README.md", REPO_ROOT / "scenarios" / "HEALTHY.md", *ENGINE.rglob("*.py"),
             *(REPO_ROOT / "tests").glob("*.py")]
    found = [(path.relative_to(REPO_ROOT), int(m.group(1))) for path in texts
             for m in counted.finditer(path.read_text(encoding="utf-8"))]
    assert len(found) >= 20 and {n for _, n in found} == {len(WELL_BUILT)}, found


def test_fixes_import_no_project_module():
    for fix in (REPO_ROOT / "fixes").glob("*.py"):
        project = sorted(m for m in _imports(fix) if m.split(".")[0] in ("scenarios", "fixes"))
        assert not project, f"{fix.relative_to(REPO_ROOT)} imports {project}: a fix is one file a user copies"


def test_every_check_names_an_existing_scenario_and_owns_its_fix_texts():
    for check in CHECKS:
        assert name_of(check) in SCENARIO_FOLDERS and name_of(check)[:2] == check.SCENARIO
        assert check.FIXES and all(text.strip() for text in check.FIXES.values())
        # a check finds something by one of its hooks or texts: any name of the contract but its
        # bookkeeping (a log-only check has texts and no hook)
        finds = set(CONTRACT) - {"SCENARIO", "FIXES", "HEALTHY", "WINS_OVER", "EXPLAINS", "UNLESS", "NEEDS",
                                 "CONSEQUENCE", "CONTEXT", "merge", "error_detail"}
        assert any(hasattr(check, part) for part in finds), f"{check.__name__} finds nothing: none of {sorted(finds)}"
    for pattern, check, name in error_table():
        re.compile(pattern)
        assert name in check.FIXES, f"{check.__name__}: error text {pattern!r} names {name}, which has no fix text"


def test_the_error_table_ends_with_its_catch_all():
    *_, (pattern, check, name) = error_table()
    assert pattern == "" and check.SCENARIO == "02"
    assert all(p for p, _, _ in error_table()[:-1]), "only the last entry may match everything"


def _wins_over(check, other) -> bool:
    wins = getattr(check, "WINS_OVER", ())
    return other.SCENARIO in wins or ("*" in wins and "*" not in getattr(other, "WINS_OVER", ()))


def _witnesses() -> list[str]:
    """Texts users paste: every traceback block and line of the stored logs, every catalogued message."""
    from scenarios.clinic.doctor import catalogue
    from scenarios.clinic.doctor.explain import blocks, unwrap

    texts = [entry.sample for entry in catalogue.load()[1]]
    for log in (REPO_ROOT / "tests" / "logs").rglob("*.log"):
        lines = unwrap(log.read_text(encoding="utf-8", errors="replace"))
        texts += ["\n".join(block) for _, block in blocks(lines)] + lines
    return texts


def test_where_two_checks_error_texts_meet_one_declares_it_wins():
    """The error table's order comes from WINS_OVER, not from a list: wherever a text users paste
    matches the ERRORS of two checks, one of them declares (directly or through others) that it wins."""
    order = {check.SCENARIO: place for place, check in enumerate(CHECKS)}
    declared = {(a.SCENARIO, b.SCENARIO) for a in CHECKS for b in CHECKS if a is not b and _wins_over(a, b)}
    for middle in order:   # the transitive closure: a over b over c puts a over c
        declared |= {(a, c) for a, b in declared for b2, c in declared if b == middle == b2 and a != c}
    met = set()
    for text in _witnesses():
        hit = sorted({c.SCENARIO for p, c, _ in error_table() if p and re.search(p, text)}, key=order.get)
        met |= {(a, b) for i, a in enumerate(hit) for b in hit[i + 1:]}
    assert met, "no witness text matches two checks: the test would check nothing"
    undeclared = sorted(met - declared)
    assert not undeclared, f"texts match both checks of {undeclared}: declare which wins (WINS_OVER)"


def test_a_circle_of_wins_over_is_an_error():
    from types import SimpleNamespace as Check

    a = Check(SCENARIO="98", WINS_OVER=("99",), __name__="s98_a")
    b = Check(SCENARIO="99", WINS_OVER=("98",), __name__="s99_b")
    with pytest.raises(ValueError, match="circle"):
        ordered([a, b])
    assert [c.SCENARIO for c in ordered([b, Check(SCENARIO="98", __name__="s98_a")])] == ["99", "98"]


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
                  ("findings", "evidence", "holdings", "setup", "job", "stacks", "events", "printed", "waits")}
SHARED_READERS |= {"scenarios.clinic.paths"}


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
    loads the event names alone, not the checks."""
    code = ("import sys, scenarios.clinic.doctor.events; "
            "print(' '.join(sorted(m for m in sys.modules if m.startswith(('scenarios', 'fixes')))))")
    loaded = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True,
                            check=True).stdout.split()
    assert loaded == ["scenarios", "scenarios.clinic", "scenarios.clinic.doctor", "scenarios.clinic.doctor.events"]
    code = "import sys, scenarios.clinic.doctor.checks; print(sorted(m for m in sys.modules if '.checks.' in m))"
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True,
                          check=True).stdout.strip() == "[]", "importing the checks' package imported a check"
    for face in ENGINE.rglob("__init__.py"):
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


def test_a_misspelt_level_or_probe_outcome_is_an_error():
    import json

    from scenarios.clinic.doctor.findings import Finding, Weight, finder, text_finder
    from scenarios.clinic.doctor.probe import Outcome, ProbeResult

    finding = Finding("03", "risk", "copy-on-read", "figures", "a fix")
    assert finding.level is Weight.RISK and finding.level == "risk"
    assert json.loads(json.dumps(finding.as_dict()))["level"] == "risk"
    assert ProbeResult(outcome="not-run").outcome is Outcome.NOT_RUN
    for wrong in (lambda: Finding("03", "rsk", "copy-on-read", "figures", "a fix"),
                  lambda: ProbeResult(outcome="stuck")):
        with pytest.raises(ValueError, match="is not a valid"):
            wrong()
    # the doctor weighs, explain is sure: a check's finder takes no confidence, its text finder no weight
    for wrong in (lambda: finder("03", {"copy-on-read": "a fix"})("likely", "copy-on-read", "figures"),
                  lambda: text_finder("03", {"copy-on-read": "a fix"}, "03 · doc")("risk", "copy-on-read", "a", "b")):
        with pytest.raises(ValueError, match="is not a valid"):
            wrong()


@pytest.mark.parametrize("folder", SCENARIO_FOLDERS)
def test_a_scenario_folder_has_all_it_needs_and_none_is_a_skeleton(folder):
    left = unwritten(REPO_ROOT, folder)
    assert not left, (f"scenario {folder[:2]} is {MARK}: {', '.join(left)} (missing, or still the skeleton of "
                      "`python -m scenarios new`; scenarios/MAP.md lists what a scenario adds)")


def test_a_new_scenario_folder_alone_is_told_what_it_lacks(tmp_path):
    (tmp_path / "scenarios" / "99_new_failure").mkdir(parents=True)
    (tmp_path / "scenarios" / "99_new_failure" / "broken.py").write_text("")
    assert unwritten(tmp_path, "99_new_failure") == [
        "scenarios/99_new_failure/README.md (missing)", "scenarios/99_new_failure/fixed.py (missing)",
        "scenarios/99_new_failure/scenario.toml (missing)",
        "scenarios/clinic/doctor/checks/s99_new_failure.py (missing)",
        "notebooks/99_new_failure.ipynb (missing)", "tests/test_scenario_99.py (missing)"]
