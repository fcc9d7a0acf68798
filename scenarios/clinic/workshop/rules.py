"""Graded exercises: an attendee fixes a scenario's broken.py with their own hands.

    python -m scenarios practice 05        # copy broken.py to workshop/05_….py (never over an attempt)
    python -m scenarios check 05 [FILE]    # run the attempt through the runner and grade it
    python -m scenarios hint 05            # the next of three hints
    python -m scenarios solution 05        # diff -u broken.py fixed.py, once asked for
    python -m scenarios workshop-status    # every exercise: not started / not yet / passed

Grading is one run of the attempt by the runner, under the limit and supervision of the
scenario's `fixed` variant, judged against that variant's own declaration (expect,
evidence, metric bounds), plus what the runner checks itself, declared per scenario in
the `[exercise]` table of its scenario.toml:

    [exercise]
    lesson = "…"             # what the exercise teaches, one line (practice shows it)
    hints = ["…", "…", "…"]  # a nudge toward the cause; where to look; the fix in fixes/
    min_workers = 2          # worker processes the runner must see below the script
    allowed = ["NAME"]       # UPPER_CASE constants a fix may change (default: none)
    keywords = ["batch_size"]  # literal keyword arguments (and defaults) a fix may not change
                             # (default: batch_size, num_workers)
    keep = ["check_epoch(corpus, consumed, skipped)"]  # statements kept as broken.py has them
    ignore = ["predicted_peak_mb"]  # figures of `fixed` that only our own fix reports
    metrics = { sampled_worker_uss_growth_mb = { max = 40 } }  # on top of fixed's; a figure fixed
                             # bounds too gets these bounds instead (22: any shard count >= workers)
    observe = { workers = 2, batches = 128, worker_share = 0.5 }  # what the DataLoaders must do
    seeded = true            # the bad items a fix must handle move with a seed the grader picks
                             # for each run (02, 06), so a fix that names them fails
    not_judged = ["…"]       # what grading cannot see in this exercise: said beside every grade
    kill_job = { argv = ["--train", "fork"], ready = "^step 1:", kill_at = "^step 3:" }  # the grader
                             # runs the job itself, pauses it, SIGKILLs it and counts its workers (20;
                             # killed_job.py)

`observe` is judged on what the runner's hook recorded inside PyTorch, never on the attempt's
prints: its keys are described, and judged, in observations.py.  A figure the script prints is
the attempt's claim: where the lesson's own measure is one the script could compute, the grade
also rests on the same thing seen from outside the attempt's code (the runner's samples of each
worker's memory, the hook's census of each worker's threads from /proc, the grader's own kill).

What every exercise keeps without declaring it: broken.py's UPPER_CASE constants (the
workload and its budgets), each statement that prints a `metric` line, each `if …:`
that ends the run with sys.exit / SystemExit (the script's own check), and what it imports
from the scenario's helper modules and the lab kit, neither redefined nor changed (stage.py).  No figure may be
printed as a fixed value, and no figure twice.  `grade()` judges a recorded result and
never runs anything; `check()` runs the attempt, then grades it.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import re
import traceback
from pathlib import Path

from scenarios.clinic.paths import shown
from scenarios.clinic.run.declarations import REPO_ROOT, Scenario, ScenarioError
from scenarios.clinic.workshop.stage import stage_problems
from scenarios.host import EXIT_CANNOT_RUN, EXIT_NOT_AS_EXPECTED, EXIT_OK

# Attempts and progress; CLINIC_WORKSHOP_DIR puts them elsewhere (the tests use a temporary folder).
WORKSHOP_ENV = "CLINIC_WORKSHOP_DIR"
WORKSHOP_DIR = Path(os.environ.get(WORKSHOP_ENV) or REPO_ROOT / "workshop")
PROGRESS_FILE = ".progress.json"  # hints shown and the last grade, per exercise
CONSTANT = re.compile(r"^[A-Z][A-Z0-9_]*$")
METRIC_TEXT = re.compile(r"metric (\w+|\{\})=")
PASSED, NOT_YET, CANNOT_RUN = "passed", "not yet", "cannot run here"


class AttemptSyntaxError(ScenarioError):
    """The attempt is not valid Python: shown as Python shows it, never with our traceback."""


@dataclasses.dataclass
class Grade:
    scenario: str
    file: str
    state: str                       # passed | not yet | cannot run here
    problems: list[str]              # one sentence each, for the attendee
    seen: dict                       # what the runner saw: outcome, workers, seconds, evidence
    result: dict | None = None       # the runner's whole result (None: not run)

    @property
    def exit_status(self) -> int:
        return {PASSED: EXIT_OK, NOT_YET: EXIT_NOT_AS_EXPECTED}.get(self.state, EXIT_CANNOT_RUN)

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "exit_status": self.exit_status}


# ---------------------------------------------------------------- declarations and files

def exercise_of(scenario: Scenario) -> dict:
    """The scenario's `[exercise]` table ({} where it has none), read with its declaration."""
    return scenario.exercise


def attempt_path(scenario: Scenario, folder: Path | None = None) -> Path:
    return (folder or WORKSHOP_DIR) / f"{scenario.slug}.py"


def read_attempt(path: Path) -> str:
    """The attempt's source, or ScenarioError (bad input) with one line that says why."""
    if path.is_dir():
        raise ScenarioError(f"{shown(path)} is a folder; give the attempt's .py file")
    if not path.is_file():
        raise ScenarioError(f"no file {shown(path)}")
    try:
        source = path.read_text()
    except UnicodeDecodeError:
        raise ScenarioError(f"{shown(path)} is not Python source (not UTF-8 text)") from None
    try:
        compile(source, shown(path), "exec")
    except (SyntaxError, ValueError) as err:  # ValueError: a NUL byte
        raise AttemptSyntaxError("".join(traceback.format_exception_only(err)).rstrip()) from None
    return source


# ---------------------------------------------------------------- what the attempt must keep

def _value(node: ast.AST):
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ast.unparse(node)


def module_constants(tree: ast.Module) -> dict:
    """Module-level UPPER_CASE assignments, `A, B = 1, 2` included: name -> value."""
    found = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) and node.value is not None else []
        for target in targets:
            if isinstance(target, ast.Name) and CONSTANT.match(target.id):
                found[target.id] = _value(node.value)
            elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) \
                    and len(target.elts) == len(node.value.elts):
                for name, value in zip(target.elts, node.value.elts):
                    if isinstance(name, ast.Name) and CONSTANT.match(name.id):
                        found[name.id] = _value(value)
    return found


def _imported_names(tree: ast.Module) -> set[str]:
    return {alias.asname or alias.name for node in tree.body if isinstance(node, ast.ImportFrom)
            for alias in node.names}


def _literal_keywords(tree: ast.AST, names) -> dict[str, list]:
    """keyword -> every literal value it is given in a call, for the keywords named."""
    found: dict[str, list] = {}
    for node in ast.walk(tree):
        pairs = []
        if isinstance(node, ast.Call):
            pairs = [(keyword.arg, keyword.value) for keyword in node.keywords]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):  # def main(num_workers=2)
            positional = node.args.posonlyargs + node.args.args
            pairs = [(arg.arg, default) for arg, default in zip(positional[::-1], node.args.defaults[::-1])]
            pairs += [(arg.arg, default) for arg, default in zip(node.args.kwonlyargs, node.args.kw_defaults)
                      if default is not None]
        for name, value in pairs:
            if name in names and isinstance(value, ast.Constant):
                found.setdefault(name, []).append(value.value)
    return found


def _is_exit(node: ast.AST) -> bool:
    """sys.exit(…), exit(…) or raise SystemExit(…)."""
    if isinstance(node, ast.Raise) and node.exc is not None:
        exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        return isinstance(exc, ast.Name) and exc.id == "SystemExit"
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        return (isinstance(func, ast.Attribute) and func.attr == "exit" and isinstance(func.value, ast.Name)
                and func.value.id == "sys") or (isinstance(func, ast.Name) and func.id == "exit")
    return False


def _texts(node: ast.AST) -> list[str]:
    """The literal text of every string in `node`, an f-string's fields as {}."""
    texts = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.JoinedStr):
            texts.append("".join(v.value if isinstance(v, ast.Constant) else "{}" for v in sub.values))
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            texts.append(sub.value)
    return texts


def _prints_metric(node: ast.AST) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and \
        isinstance(node.value.func, ast.Name) and node.value.func.id == "print" and \
        any(METRIC_TEXT.search(text) for text in _texts(node))


def kept_statements(tree: ast.Module, extra: list[str]) -> list[ast.stmt]:
    """What broken.py measures and checks: metric prints, the `if` that exits, and `keep`."""
    kept = []
    for node in ast.walk(tree):
        if _prints_metric(node):
            kept.append(node)
        elif isinstance(node, ast.If) and any(_is_exit(s) for s in node.body):
            kept.append(node)
    statements = {ast.dump(node): node for node in ast.walk(tree) if isinstance(node, ast.stmt)}
    for snippet in extra:  # broken.py's own statement where it has it (for its line number)
        kept.extend(statements.get(ast.dump(node), node) for node in ast.parse(snippet).body)
    return kept


def _fixed_figures(tree: ast.Module) -> list[str]:
    """Figures printed as a fixed value: "metric repeats=0", f"metric repeats={0}"."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else
                           str(v.value.value) if isinstance(v.value, ast.Constant) else "{}" for v in node.values)
            found += re.findall(r"metric (\w+)=(?!\{\})", text)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found += re.findall(r"metric (\w+)=\s*-?[\d.]", node.value)
    return sorted(set(found))


def _constant_problems(broken: ast.Module, attempt: ast.Module, allowed: set) -> list[str]:
    """broken.py's UPPER_CASE constants and imported values: the workload and its budgets."""
    problems = []
    ours, theirs = module_constants(broken), module_constants(attempt)
    for name, value in ours.items():
        if name in allowed:
            continue
        if name not in theirs:
            problems.append(f"you removed {name} (broken.py: {name} = {value!r}); the exercise keeps "
                            "the workload and its budgets: fix the cause instead")
        elif theirs[name] != value:
            problems.append(f"you changed {name} from {value!r} to {theirs[name]!r}; the exercise keeps "
                            "the workload and its budgets: fix the cause instead")
    for name in sorted((set(theirs) - set(ours)) & _imported_names(broken) - allowed):
        problems.append(f"you set {name} = {theirs[name]!r} over the value broken.py imports; "
                        "the exercise keeps the workload and its budgets: fix the cause instead")
    return problems


def _keyword_problems(broken: ast.Module, attempt: ast.Module, names: list[str]) -> list[str]:
    """Literal keyword values (batch_size=, num_workers=, …) the attempt gives and broken.py does not."""
    problems = []
    before, after = _literal_keywords(broken, names), _literal_keywords(attempt, names)
    for keyword, values in after.items():
        for value in dict.fromkeys(values):
            if value not in before.get(keyword, []):
                was = ", ".join(map(repr, dict.fromkeys(before[keyword]))) if keyword in before else "no literal value"
                keeps = {"batch_size": "the workload", "num_workers": "the workers, which are the point",
                         "persistent_workers": "the workers, which are the point"}.get(
                    keyword, f"broken.py's {keyword}, which the lesson is about")
                problems.append(f"you set {keyword}={value!r} (broken.py: {was}); the exercise keeps "
                                f"{keeps}: fix the cause instead")
    return problems


def static_problems(scenario: Scenario, attempt_source: str, broken_source: str) -> list[str]:
    """What the attempt changed that the exercise keeps: one sentence each."""
    exercise = exercise_of(scenario)
    broken, attempt = ast.parse(broken_source), ast.parse(attempt_source)
    problems = _constant_problems(broken, attempt, set(exercise.get("allowed", [])))
    problems += _keyword_problems(broken, attempt, exercise.get("keywords", ["batch_size", "num_workers"]))
    present = {ast.dump(node) for node in ast.walk(attempt) if isinstance(node, ast.stmt)}
    for node in kept_statements(broken, exercise.get("keep", [])):
        if ast.dump(node) not in present:
            shown = ast.unparse(node).splitlines()[0]
            where = f" (line {node.lineno})" if hasattr(node, "lineno") else ""
            problems.append(f"broken.py's `{shown}`{where} is missing or changed; the exercise keeps "
                            "the script's own measurements and checks: fix the cause, not the check")
    problems += stage_problems(broken, attempt)
    for name in _fixed_figures(attempt):
        problems.append(f"the attempt prints `metric {name}=` with a fixed value; the grade reads "
                        "figures the script measures, so printing the expected line cannot pass")
    return problems
