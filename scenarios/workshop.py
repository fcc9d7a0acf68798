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
    metrics = { sampled_worker_uss_growth_mb = { max = 40 } }  # runner-measured, on top of fixed's

What every exercise keeps without declaring it: broken.py's UPPER_CASE constants (the
workload and its budgets), each statement that prints a `metric` line, and each `if …:`
that ends the run with sys.exit / SystemExit (the script's own check).  No figure may be
printed as a fixed value, and no figure twice.  `grade()` judges a recorded result and
never runs anything; `check()` runs the attempt, then grades it.
"""
from __future__ import annotations

import ast
import dataclasses
import difflib
import hashlib
import json
import os
import re
import shutil
import sys
import tomllib
import traceback
from pathlib import Path

from scenarios import judge
from scenarios.declarations import (REPO_ROOT, CannotRunHere, Scenario, ScenarioError, discover, get_scenario,
                                    missing_needs)
from scenarios.host import EXIT_CANNOT_RUN, EXIT_NOT_AS_EXPECTED, EXIT_OK

# Attempts and progress; CLINIC_WORKSHOP_DIR puts them elsewhere (the tests use a temporary folder).
WORKSHOP_DIR = Path(os.environ.get("CLINIC_WORKSHOP_DIR") or REPO_ROOT / "workshop")
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
    """The scenario's `[exercise]` table ({} where it has none)."""
    return tomllib.loads(scenario.declaration.read_text()).get("exercise", {})


def attempt_path(scenario: Scenario, folder: Path | None = None) -> Path:
    return (folder or WORKSHOP_DIR) / f"{scenario.slug}.py"


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def read_attempt(path: Path) -> str:
    """The attempt's source, or ScenarioError (bad input) with one line that says why."""
    if path.is_dir():
        raise ScenarioError(f"{_shown(path)} is a folder; give the attempt's .py file")
    if not path.is_file():
        raise ScenarioError(f"no file {_shown(path)}")
    try:
        source = path.read_text()
    except UnicodeDecodeError:
        raise ScenarioError(f"{_shown(path)} is not Python source (not UTF-8 text)") from None
    try:
        compile(source, _shown(path), "exec")
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


def static_problems(scenario: Scenario, attempt_source: str, broken_source: str) -> list[str]:
    """What the attempt changed that the exercise keeps: one sentence each."""
    exercise = exercise_of(scenario)
    allowed = set(exercise.get("allowed", []))
    broken, attempt = ast.parse(broken_source), ast.parse(attempt_source)
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

    names = exercise.get("keywords", ["batch_size", "num_workers"])
    before, after = _literal_keywords(broken, names), _literal_keywords(attempt, names)
    for keyword, values in after.items():
        for value in dict.fromkeys(values):
            if value not in before.get(keyword, []):
                was = ", ".join(map(repr, dict.fromkeys(before[keyword]))) if keyword in before else "no literal value"
                keeps = "the workload" if keyword == "batch_size" else "the workers, which are the point"
                problems.append(f"you set {keyword}={value!r} (broken.py: {was}); the exercise keeps "
                                f"{keeps}: fix the cause instead")

    present = {ast.dump(node) for node in ast.walk(attempt) if isinstance(node, ast.stmt)}
    for node in kept_statements(broken, exercise.get("keep", [])):
        if ast.dump(node) not in present:
            shown = ast.unparse(node).splitlines()[0]
            where = f" (line {node.lineno})" if hasattr(node, "lineno") else ""
            problems.append(f"broken.py's `{shown}`{where} is missing or changed; the exercise keeps "
                            "the script's own measurements and checks: fix the cause, not the check")

    for name in _fixed_figures(attempt):
        problems.append(f"the attempt prints `metric {name}=` with a fixed value; the grade reads "
                        "figures the script measures, so printing the expected line cannot pass")
    return problems


# ---------------------------------------------------------------- the grade

def _sentence(breach: str, spec: dict, result: dict) -> str:
    """A breach of the fixed declaration, said for an attendee."""
    if breach.startswith("outcome "):
        outcome = result["outcome"]
        said = {"hang": f"it was still waiting after its {result['limit_s']:g} s limit (a hang)",
                "error": "it ended with an error",
                "signal": f"it was killed by {result.get('signal') or 'a signal'}",
                "completed": "it completed"}.get(outcome, outcome)
        return f"{said}; fixed needs it to {spec['expect'].replace('completed', 'complete')}"
    if breach.startswith("output lacks"):
        return f"its output has no line like /{spec.get('evidence')}/, which the fixed run prints"
    if breach.endswith("was not measured"):
        name = breach.split()[0]
        if name.startswith("sampled_"):
            return f"the runner measured no {name} (no worker lived long enough to be sampled)"
        return f"it never reported {name} (a `metric {name}=…` line): keep broken.py's measurements"
    match = re.match(r"(\w+)=(\S+) ([<>]) (\S+)", breach)
    if match:
        name, value, side, bound = match.groups()
        need = "at least" if side == "<" else "at most"
        who = "the runner measured" if name.startswith("sampled_") or name == "seconds" else "it reported"
        return f"{who} {name}={value}; fixed needs {need} {bound}"
    return breach


def grade(scenario: Scenario, result: dict | None, attempt_source: str, broken_source: str,
          file: str = "") -> Grade:
    """Judge one recorded run of an attempt (no run here): static checks, the runner's own
    checks, and the scenario's declaration of `fixed`."""
    exercise = exercise_of(scenario)
    problems = static_problems(scenario, attempt_source, broken_source)
    if result is None:
        return Grade(scenario.number, file, NOT_YET, problems, {"ran": False})
    seen = {"outcome": result["outcome"], "seconds": result["seconds"],
            "worker_processes": result.get("worker_processes_seen"),
            "evidence": result.get("evidence", "")}
    if result["outcome"] == "cannot-run":
        return Grade(scenario.number, file, CANNOT_RUN, [f"this machine cannot run it: {seen['evidence']}"],
                     seen, result)

    spec = dict(scenario.variants["fixed"])
    ignored = set(exercise.get("ignore", []))
    spec["metrics"] = {name: bounds for name, bounds in spec.get("metrics", {}).items() if name not in ignored}
    spec["metrics"].update(exercise.get("metrics", {}))
    # The evidence line again, by the pattern of `fixed` (a recorded run of another variant
    # was summed up by its own pattern).
    lines = result.get("output_tail", "").splitlines()
    result = dict(result, evidence=judge.evidence(result["outcome"], spec.get("evidence"), lines,
                                                  result["outcome"] == "hang"))
    seen["evidence"] = result["evidence"]

    wanted = exercise.get("min_workers", 1)
    workers = result.get("worker_processes_seen")
    if workers is not None and workers < wanted:
        problems.append(f"the runner saw {workers} worker process{'es' if workers != 1 else ''} below "
                        f"the script; the exercise needs at least {wanted}: it is about DataLoader workers, "
                        "and fewer of them (num_workers=0, say) hides a failure instead of fixing it")
    reported: dict[str, list[float]] = {}
    for match in filter(None, map(judge.METRIC_LINE.match, lines)):
        reported.setdefault(match.group(1), []).append(float(match.group(2)))
    for name, values in reported.items():
        if len(set(values)) > 1:
            problems.append(f"it reported {name} {len(values)} times ({', '.join(f'{v:g}' for v in values)}); "
                            "a figure is reported once")
    breaches = judge.breaches(spec, result)
    if result["outcome"] != spec["expect"]:  # figures never reported follow from that: say it once
        breaches = [b for b in breaches if not b.endswith("was not measured")]
    problems += [_sentence(breach, spec, result) for breach in breaches]
    if result.get("surviving_processes"):
        problems.append(f"{result['surviving_processes']} process(es) outlived the run")
    return Grade(scenario.number, file, NOT_YET if problems else PASSED, problems, seen, result)


def check(number: str, file: str | Path | None = None, show=None, record: bool = True) -> Grade:
    """Run the attempt (default: workshop/NN_slug.py) through the runner and grade it.
    Bad input raises ScenarioError; a machine that cannot run it, CannotRunHere."""
    from scenarios.runner import run_variant  # imports psutil; the other commands need not

    scenario = get_scenario(number)
    path = Path(file) if file else attempt_path(scenario)
    if not file and not path.is_file():
        raise ScenarioError(f"no attempt {_shown(path)} yet: `make practice-{scenario.number}` makes it")
    source = read_attempt(path)
    broken_source = scenario.script("broken").read_text()
    why_not = missing_needs(scenario)
    if why_not:
        raise CannotRunHere(f"scenario {scenario.number} cannot run here: {why_not}")
    problems = static_problems(scenario, source, broken_source)
    if problems:  # no run: what it changed is the answer, and it is instant
        result = None
    else:
        if show:
            print(f"▶ {_shown(path)}  (graded as scenario {scenario.number}'s fixed.py: "
                  f"limit {scenario.limit_for('fixed'):g} s)", file=show, flush=True)
        result = run_variant(scenario, "fixed", show, script=path.resolve())
    graded = grade(scenario, result, source, broken_source, file=_shown(path))
    if record and path.resolve() == attempt_path(scenario).resolve():
        _record_grade(scenario, graded, source)
    return graded


# ---------------------------------------------------------------- progress in workshop/

def _progress(folder: Path) -> dict:
    try:
        return json.loads((folder / PROGRESS_FILE).read_text())
    except (OSError, ValueError):
        return {}


def _save_progress(folder: Path, progress: dict) -> None:
    folder.mkdir(exist_ok=True)
    (folder / PROGRESS_FILE).write_text(json.dumps(progress, indent=1, sort_keys=True))


def _digest(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def _record_grade(scenario: Scenario, graded: Grade, source: str, folder: Path | None = None) -> None:
    folder = folder or WORKSHOP_DIR
    progress = _progress(folder)
    progress.setdefault("grades", {})[scenario.number] = {
        "state": graded.state, "digest": _digest(source), "problems": graded.problems[:3],
        "seconds": graded.seen.get("seconds")}
    _save_progress(folder, progress)


def practice(number: str, folder: Path | None = None) -> str:
    """Copy broken.py to the workshop folder, never over an attempt; say what to do."""
    scenario = get_scenario(number)
    path = attempt_path(scenario, folder)
    n, readme = scenario.number, f"scenarios/{scenario.slug}/README.md"
    if path.exists():
        opening = f"{_shown(path)} is already there: your attempt, left as it is."
    else:
        path.parent.mkdir(exist_ok=True)
        shutil.copyfile(scenario.script("broken"), path)
        opening = f"copied scenarios/{scenario.slug}/broken.py to {_shown(path)}"
    lesson = exercise_of(scenario).get("lesson", scenario.title)
    why_not = missing_needs(scenario)
    return "\n".join([
        opening,
        "",
        f"Exercise {n}: {scenario.title}",
        f"  what it teaches: {lesson}",
        f"  1. Edit {_shown(path)} until the failure is gone: the same data, sizes and loop,",
        "     the same workers, the same checks at the end; change only what causes it.",
        f"  2. Read {readme} (Symptom, Root cause) — not its Fix section, unless you want to.",
        f"  3. make check-{n}   runs your file through the runner and grades it (exit 0: passed)",
        f"     make hint-{n}    the next of three hints · make solution-{n} SHOW=1   our diff",
        *([f"  note: this machine cannot run it ({why_not}); see the facilitator's guide"] if why_not else []),
    ])


def hint(number: str, folder: Path | None = None) -> str:
    """The next hint (1, 2, 3), then the last one again; progress kept in workshop/."""
    scenario = get_scenario(number)
    hints = exercise_of(scenario).get("hints", [])
    if not hints:
        raise ScenarioError(f"scenario {scenario.number} declares no hints ([exercise] in its scenario.toml)")
    folder = folder or WORKSHOP_DIR
    progress = _progress(folder)
    shown = progress.setdefault("hints", {}).get(scenario.number, 0)
    index = min(shown, len(hints) - 1)
    progress["hints"][scenario.number] = index + 1
    _save_progress(folder, progress)
    text = f"Hint {index + 1} of {len(hints)} for exercise {scenario.number}: {hints[index]}"
    if index + 1 == len(hints):
        text += f"\n(That is the last hint; `make solution-{scenario.number} SHOW=1` shows our fix as a diff.)"
    return text


def solution(number: str, folder: Path | None = None) -> str:
    """Our fix: the unified diff of broken.py and fixed.py (the lesson of the scenario)."""
    scenario = get_scenario(number)
    broken, fixed = scenario.script("broken"), scenario.script("fixed")
    rel = f"scenarios/{scenario.slug}"
    diff = difflib.unified_diff(broken.read_text().splitlines(keepends=True), fixed.read_text().splitlines(keepends=True),
                                f"{rel}/broken.py", f"{rel}/fixed.py")
    folder = folder or WORKSHOP_DIR
    progress = _progress(folder)
    progress.setdefault("solutions_shown", {})[scenario.number] = True
    _save_progress(folder, progress)
    return "".join(diff).rstrip("\n")


def status(folder: Path | None = None) -> list[dict]:
    """Every exercise's state, from the attempts in the folder and the last grade recorded."""
    folder = folder or WORKSHOP_DIR
    progress = _progress(folder)
    rows = []
    for number, scenario in discover().items():
        path = attempt_path(scenario, folder)
        last = progress.get("grades", {}).get(number)
        if not path.is_file():
            state = "not started"
        elif last and last["state"] == PASSED and last["digest"] == _digest(path.read_text(errors="replace")):
            state = PASSED
        elif last and last["state"] == PASSED:
            state = "not yet (changed since it passed)"
        elif last:
            state = last["state"] if last["state"] == CANNOT_RUN else NOT_YET
        else:
            state = "not yet (never checked)"
        rows.append({"exercise": number, "title": scenario.title, "state": state,
                     "hints": progress.get("hints", {}).get(number, 0),
                     "solution_shown": bool(progress.get("solutions_shown", {}).get(number)),
                     "can_run_here": missing_needs(scenario) is None})
    return rows


def status_table(rows: list[dict]) -> str:
    lines = [f"{'':2} {'state':<36} {'hints':>5}  exercise"]
    for row in rows:
        state = row["state"] + (" (solution seen)" if row["solution_shown"] else "")
        state = state if row["can_run_here"] else f"{state}; cannot run on this machine"
        title = row["title"] if len(row["title"]) <= 72 else row["title"][:71] + "…"
        lines.append(f"{row['exercise']:2} {state:<36} {row['hints']:>5}  {title}")
    passed = sum(row["state"] == PASSED for row in rows)
    lines.append(f"\n{passed} of {len(rows)} passed · make practice-NN to start one · make check-NN to grade it")
    return "\n".join(lines)


def grade_text(graded: Grade) -> str:
    """What an attendee reads after `check`."""
    seen = graded.seen
    if seen.get("ran") is False:
        ran = "not run: the changes below are enough to say"
    else:
        workers = seen.get("worker_processes")
        ran = (f"ran {seen['seconds']:g} s, outcome {seen['outcome']}, "
               f"{workers if workers is not None else '?'} worker processes seen by the runner")
    head = {PASSED: "✔ passed", NOT_YET: "✘ not yet", CANNOT_RUN: "– cannot run here"}[graded.state]
    lines = [f"{head}: exercise {graded.scenario} · {graded.file} · {ran}"]
    if seen.get("evidence") and graded.state != CANNOT_RUN:
        lines.append(f"  last word: {seen['evidence']}")
    lines += [f"  - {problem}" for problem in graded.problems]
    stacks = (graded.result or {}).get("stacks") or ""
    if graded.result and graded.result["outcome"] == "hang" and stacks:
        lines.append("  where each process waited when the limit hit (innermost calls first; all of it: --json):")
        lines += [f"    {line}" for line in _short_stacks(stacks)]
    if graded.state == NOT_YET:
        lines.append(f"  next: make hint-{graded.scenario} · read the README's Root cause · make check-{graded.scenario}")
    return "\n".join(lines)


def _short_stacks(stacks: str, frames: int = 4) -> list[str]:
    """A py-spy dump, shortened: each process, each of its threads but the queue feeders, and
    their innermost frames."""
    shown, keep = [], 0
    for line in stacks.splitlines():
        if line.startswith(("Process ", "Python v")):
            keep = 0
            shown += [line] if line.startswith("Process ") else []
        elif line.lstrip().startswith("Thread "):
            keep = 0 if "QueueFeederThread" in line else frames
            shown += [line.strip()] if keep else []
        elif keep and line.strip():
            shown.append("  " + line.strip())
            keep -= 1
    return shown


def say_bad_input(err: ScenarioError, stream=sys.stderr) -> None:
    """Bad input as one line (a syntax error: the attendee's own, as Python shows it)."""
    if isinstance(err, AttemptSyntaxError):
        print(f"error: the attempt is not valid Python:\n{err}", file=stream)
    else:
        print(f"error: {err}", file=stream)
