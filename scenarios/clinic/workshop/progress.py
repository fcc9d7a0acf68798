"""The attendee's side: practice, hints, the solution, and progress kept in workshop/."""
from __future__ import annotations

import datetime
import difflib
import hashlib
import json
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
        "seconds": graded.seen.get("seconds"),
        # when it was checked, so that a facilitator reading many laptops' files sees who is where
        "when": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}
    _save_progress(folder, progress)


def practice(number: str, folder: Path | None = None) -> str:
    """Copy broken.py to the workshop folder byte for byte, never over an attempt; say what to do.
    The copy is never edited (not even its docstring), so that `diff broken.py attempt` is the
    attendee's fix alone; what the attendee must know about the file is said here instead."""
    scenario = get_scenario(number)
    path = attempt_path(scenario, folder)
    n, broken, readme = scenario.number, f"scenarios/{scenario.slug}/broken.py", f"scenarios/{scenario.slug}/README.md"
    if path.exists():
        opening = f"{shown(path)} is already there: your attempt, left as it is."
    else:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(scenario.script("broken").read_bytes())
        opening = f"copied {broken} to {shown(path)}, unchanged"
    lesson = exercise_of(scenario).get("lesson", scenario.title)
    why_not = missing_needs(scenario)
    return "\n".join([
        opening,
        "",
        f"Exercise {n}: {scenario.title}",
        f"  what it teaches: {lesson}",
        f"  1. Edit {shown(path)} until the failure is gone: the same data, sizes and loop,",
        "     the same workers, the same checks at the end; change only what causes it.",
        *(["     Its docstring is broken.py's, whose lines about fixed.py say what fixes it: skip them",
           "     to find the fix yourself."] if "fixed.py" in scenario.script("broken").read_text() else []),
        f"  2. Read {readme} (Symptom, Root cause) — not its Fix section, unless you want to.",
        f"  3. make check-{n}   runs your file through the runner and grades it (exit 0: passed)",
        f"     make hint-{n}    the next of three hints · make solution-{n} SHOW=1   our diff",
        f"     diff -u {broken} {shown(path)}   your fix, and nothing else",
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
    text = _last_check(scenario, progress, folder) + \
        f"Hint {index + 1} of {len(hints)} for exercise {scenario.number}: {hints[index]}"
    if index + 1 == len(hints):
        text += f"\n(That is the last hint; `make solution-{scenario.number} SHOW=1` shows our fix as a diff.)"
    return text


def _last_check(scenario: Scenario, progress: dict, folder: Path) -> str:
    """What this attendee's last check of the exercise saw, said before the hint's fixed text: the hints are
    written for broken.py, and an attempt may already be past (or beside) the first of them."""
    grade = progress.get("grades", {}).get(scenario.number)
    if not grade or not grade.get("problems"):
        return ""
    path = attempt_path(scenario, folder)
    changed = path.exists() and _digest(path.read_text(errors="replace")) != grade.get("digest")
    return (f"Your last `make check-{scenario.number}` ({grade.get('when', '')[11:16]} UTC"
            f"{', on an earlier version of your file' if changed else ''}) said: {grade['problems'][0]}\n")


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
                     "can_run_here": missing_needs(scenario) is None,
                     "when": (last or {}).get("when")})
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


