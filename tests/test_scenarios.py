"""Every declared variant of every scenario shows what its scenario.toml says, and leaves nothing behind.

One parametrized test over the declarations: a scenario's own test file keeps only what is
specific to it.  Each variant runs once per session (conftest.scenario_report), and the same
runs serve the scenario tests and the notebooks.
"""
import re
from pathlib import Path

import pytest

from conftest import REPO_ROOT, scenario_report
from scenarios.clinic.run.declarations import discover

SCENARIOS = discover()
# make test proves broken and fixed of each scenario; make test-full every other declared variant too.
# A measurement whose bound this 2-core machine has missed by chance is reported without turning CI red,
# with how often it missed: 21's CPU per sample with 2 threads per core came out equal to 1 per core
# (1.00, its bound 1.05) in 1 of the 4 full runs of 2026-11-29.
FLAKY_BOUNDS = {("21", "measure_threads_per_core"): "CPU ratio at or under its 1.05 bound in 1 of 4 full runs"}


def _marks(number: str, name: str) -> list:
    flaky = FLAKY_BOUNDS.get((number, name))
    return [pytest.mark.full] + ([pytest.mark.xfail(reason=flaky, strict=False)] if flaky else [])


VARIANTS = [(number, name) if name in ("broken", "fixed") else pytest.param(number, name, marks=_marks(number, name))
            for number, scenario in SCENARIOS.items() for name in scenario.variants]
RUNNABLE = re.compile(r"^(broken|fixed)(_\w+)?\.py$|^(myth|measure)_\w+\.py$")
PER_TEST_TIMEOUT_S = 900  # pyproject.toml's pytest timeout: a scenario's variants must fit in it


@pytest.mark.parametrize("number, variant", VARIANTS, ids=lambda value: value)
def test_variant_shows_what_its_declaration_says(number, variant):
    report = scenario_report(number)
    run = report["variants"][variant]
    declared = SCENARIOS[number].variants[variant]
    assert run["outcome"] == declared["expect"], run["evidence"] + "\n" + run["output_tail"][-3000:]
    assert run["as_expected"], f"{run['breaches']}\n{run['output_tail'][-3000:]}"
    assert run["surviving_processes"] == 0, "processes outlived the run"
    left = run["leaked_shm_files"]
    # A run that ends in an error or a hang has its workers stopped wherever they are: one stopped
    # between creating a shared block and unlinking it leaves torch's file (08's broken.py, once in
    # five suite runs). The runner removes it and its report names it; a run that completes
    # leaves nothing at all.
    stopped = declared["expect"] != "completed" and all(name.startswith("torch_") for name in left)
    assert not left or stopped, f"left /dev/shm files {left}"
    assert not [name for name in left if (Path("/dev/shm") / name).exists()], "the runner did not remove them"
    if declared["expect"] != "hang":
        assert not run["stacks"], "a variant that should end by itself ran into its limit"


@pytest.mark.parametrize("number", SCENARIOS)
def test_declaration_is_sound(number):
    scenario = SCENARIOS[number]
    assert {"broken", "fixed"} <= scenario.variants.keys()
    for name, spec in scenario.variants.items():
        assert RUNNABLE.match(f"{name}.py"), f"{name}: not one of broken*, fixed*, myth_*, measure_*"
        assert scenario.script(name).is_file(), f"{name}.py is declared but missing"
        # expect, evidence and the bounds' shape are checked when the declaration is read (Variant.read)
        for metric, bounds in spec.get("metrics", {}).items():
            assert bounds.get("min", 1) != 0, f"{name}.{metric}: min = 0 is a bound no run can cross"
    # Limits add up within one test's timeout, with room for start-up.
    assert sum(scenario.limit_for(name) for name in scenario.variants) <= PER_TEST_TIMEOUT_S * 0.8


@pytest.mark.parametrize("number", SCENARIOS)
def test_folder_holds_only_variants_and_helper_modules(number):
    scenario = SCENARIOS[number]
    for path in scenario.path.glob("*.py"):
        if path.name.startswith("_"):
            continue  # a helper the scripts import; never run by itself
        assert RUNNABLE.match(path.name), f"{path.name}: name it broken*, fixed*, myth_* or measure_*"
        assert path.stem in scenario.variants, f"{path.name} is not declared in scenario.toml"


@pytest.mark.parametrize("number", SCENARIOS)
def test_one_marker_where_the_fault_is_and_where_the_fix_is(number):
    folder = SCENARIOS[number].path
    for path in folder.glob("*.py"):
        text = path.read_text()
        kind = path.name.split("_")[0].removesuffix(".py")
        wanted = {"broken": "# BUG:", "fixed": "# FIX:", "myth": "# MYTH:"}.get(kind)
        for marker in ("# BUG:", "# FIX:", "# MYTH:"):
            expected = 1 if marker == wanted else 0
            assert text.count(marker) == expected, f"{path.name}: {text.count(marker)} × {marker!r}"


@pytest.mark.parametrize("number", SCENARIOS)
def test_broken_imports_no_fix(number):
    for path in SCENARIOS[number].path.glob("broken*.py"):
        assert not re.search(r"^\s*(from|import)\s+fixes\b", path.read_text(), flags=re.M), path.name


def test_every_fix_module_is_used_by_a_fixed_script():
    scripts = "\n".join(p.read_text() for p in (REPO_ROOT / "scenarios").glob("*/fixed*.py"))
    for module in (REPO_ROOT / "fixes").glob("[a-z]*.py"):
        assert re.search(rf"\bfixes\.{module.stem}\b", scripts), f"fixes/{module.name} is used by no fixed*.py"


def test_a_variant_is_checked_when_its_declaration_is_read():
    from scenarios.clinic.run.declarations import ScenarioError, Variant
    from scenarios.clinic.run.result import Outcome

    read = Variant.read({"expect": "hang", "evidence": "^waiting", "metrics": {"x": {"max": 3}}}, "t.toml")
    assert read.expect is Outcome.HANG and dict(read) == {"expect": "hang", "evidence": "^waiting",
                                                         "metrics": {"x": {"max": 3}}}
    assert read.get("limit_s") is None and "metrics" in read
    for spec, said in (({"expect": "crash"}, "expect = 'crash', not one of completed, error, hang, signal"),
                       ({"expect": "error", "evidense": "x"}, "unknown keys ['evidense']"),
                       ({"expect": "error", "evidence": "(unclosed"}, "is not a regular expression"),
                       ({"expect": "error", "metrics": {"x": {"min": "3"}}}, "metrics.x = {'min': '3'}"),
                       ({"expect": "error", "metrics": {"x": {"timing": True}}}, "a table of min and/or max"),
                       ({"expect": "error", "limit_s": 0}, "limit_s = 0")):
        with pytest.raises(ScenarioError, match=re.escape(said)) as raised:
            Variant.read(spec, "scenarios/99_x/scenario.toml [variants.broken]")
        assert str(raised.value).startswith("scenarios/99_x/scenario.toml [variants.broken]: ")
