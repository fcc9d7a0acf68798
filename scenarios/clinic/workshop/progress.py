"""The attendee's side: practice, hints, the solution, and progress kept in workshop/."""
from __future__ import annotations

import ast
import difflib
import hashlib
import json
import re
import textwrap
from pathlib import Path

from scenarios.clinic.paths import shown
from scenarios.clinic.run.declarations import Scenario, ScenarioError, discover, get_scenario, missing_needs
from scenarios.clinic.workshop.rules import (CANNOT_RUN, Grade, NOT_YET, PASSED, PROGRESS_FILE, WORKSHOP_DIR,
                                             attempt_path, exercise_of)


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


def record_grade(scenario: Scenario, graded: Grade, source: str, folder: Path | None = None) -> None:
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
        opening = f"{shown(path)} is already there: your attempt, left as it is."
    else:
        path.parent.mkdir(exist_ok=True)
        path.write_text(without_the_answer(scenario.script("broken").read_text(), scenario.number))
        opening = f"copied scenarios/{scenario.slug}/broken.py to {shown(path)}"
    lesson = exercise_of(scenario).get("lesson", scenario.title)
    why_not = missing_needs(scenario)
    return "\n".join([
        opening,
        "",
        f"Exercise {n}: {scenario.title}",
        f"  what it teaches: {lesson}",
        f"  1. Edit {shown(path)} until the failure is gone: the same data, sizes and loop,",
        "     the same workers, the same checks at the end; change only what causes it.",
        f"  2. Read {readme} (Symptom, Root cause) — not its Fix section, unless you want to.",
        f"  3. make check-{n}   runs your file through the runner and grades it (exit 0: passed)",
        f"     make hint-{n}    the next of three hints · make solution-{n} SHOW=1   our diff",
        *([f"  note: this machine cannot run it ({why_not}); see the facilitator's guide"] if why_not else []),
    ])


def without_the_answer(source: str, number: str) -> str:
    """broken.py as an attendee receives it: its docstring less what it says of fixed.py (the usage
    line that runs it, and each sentence that tells what it changes), which is the exercise."""
    tree = ast.parse(source)
    first = tree.body[0] if tree.body else None
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        return source
    lines = source.splitlines(keepends=True)
    paragraphs = []
    for paragraph in re.split(r"\n\s*\n", first.value.value):
        if paragraph.startswith("    "):  # the commands: keep those that run broken.py
            kept = "\n".join(line for line in paragraph.splitlines() if "fixed.py" not in line)
        else:
            sentences = re.split(r"(?<=[.!?:])\s+(?=fixed\.py|[A-Z])", " ".join(paragraph.split()))
            kept = textwrap.fill(" ".join(s for s in sentences if "fixed.py" not in s and "fixed:" not in s), 100)
        paragraphs.append(kept)
    paragraphs.append(f"What fixes it is the exercise: make hint-{number} when you want a nudge.")
    text = "\n\n".join(p for p in paragraphs if p.strip())
    return "".join(lines[:first.lineno - 1]) + f'"""{text}\n"""\n' + "".join(lines[first.end_lineno:])


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
    diff = difflib.unified_diff(broken.read_text().splitlines(keepends=True),
                                fixed.read_text().splitlines(keepends=True),
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


