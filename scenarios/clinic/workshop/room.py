"""`workshop-status --room DIR`: the whole room at once, from the state files attendees hand in.

DIR holds one entry per attendee, named after them; the name is the entry's name less its suffix:
- `alice.json`: what `python -m scenarios workshop-status --json` printed on Alice's laptop (a list
  of rows, one per exercise), pasted into a chat or saved to a shared drive as it is; or
- `alice.json`: her `workshop/.progress.json`, copied as it is (a USB stick, a shared drive); or
- `alice/`: her whole `workshop/` folder, copied; its `.progress.json` is read.
Anything else in DIR is named, with why, and skipped.  Nothing here runs an attempt: a state
says what the attendee's own `make check-NN` found, last time they ran it.
"""
from __future__ import annotations

import dataclasses
import datetime
import json
import re
from pathlib import Path

from scenarios.clinic.run.declarations import ScenarioError
from scenarios.clinic.workshop.rules import PASSED, PROGRESS_FILE

EXERCISE = re.compile(r"\d\d")
NEVER_CHECKED = ("not started", "not yet (never checked)")  # a status row of an exercise never graded


@dataclasses.dataclass
class Attendee:
    name: str
    source: str              # the entry in DIR it was read from
    grades: dict             # exercise -> {"state": …, "when": ISO time or None}, each exercise checked

    @property
    def passed(self) -> list[str]:
        return sorted(n for n, grade in self.grades.items() if grade["state"] == PASSED)

    @property
    def last(self) -> tuple[str, dict] | None:
        """The exercise checked last, by the time each check recorded; None where none says when."""
        timed = [(grade["when"], number) for number, grade in self.grades.items() if grade.get("when")]
        return (max(timed)[1], self.grades[max(timed)[1]]) if timed else None

    def to_json(self) -> dict:
        last = self.last
        return {"name": self.name, "file": self.source, "passed": self.passed, "grades": self.grades,
                "last": {"exercise": last[0], **last[1]} if last else None}


class NotAStateFile(Exception):
    """Why an entry in DIR is not an attendee's state; the entry is named and skipped."""


def _json_in(text: str):
    """The JSON in a file, or in a paste that carries more around it (a ```json fence, the prompt
    line, `[alice@laptop ~]$` included): the first bracket from which a whole document parses."""
    decoder = json.JSONDecoder()
    for start in (i for i, char in enumerate(text) if char in "[{"):
        try:
            return decoder.raw_decode(text, start)[0]
        except ValueError:
            continue
    return None


def _when_of(record: dict) -> str | None:
    """The ISO time a grade was recorded, or None (older files have none; a hand edit may break it)."""
    when = record.get("when")
    return when if isinstance(when, str) else None


def _from_progress(progress: dict) -> dict:
    """workshop/.progress.json: the last grade of each exercise checked."""
    grades = progress.get("grades", {})
    if not isinstance(grades, dict) or not all(isinstance(g, dict) and isinstance(g.get("state"), str)
                                               for g in grades.values()):
        raise NotAStateFile("its \"grades\" is not a table of exercise -> {\"state\": …}")
    return {number: {"state": grade["state"], "when": _when_of(grade)} for number, grade in grades.items()}


def _from_status_rows(rows: list) -> dict:
    """workshop-status --json: a row per exercise; those never checked say nothing of the attendee."""
    if not all(isinstance(row, dict) and isinstance(row.get("exercise"), str) and isinstance(row.get("state"), str)
               for row in rows):
        raise NotAStateFile("a list, but not of workshop-status rows ({\"exercise\": …, \"state\": …})")
    return {row["exercise"]: {"state": row["state"], "when": _when_of(row)}
            for row in rows if row.get("when") or row["state"] not in NEVER_CHECKED}


def read_state(path: Path) -> dict:
    """exercise -> its last grade, from one entry of DIR, or NotAStateFile saying why not."""
    if path.is_dir():
        if not (path / PROGRESS_FILE).is_file():
            raise NotAStateFile(f"a folder without {PROGRESS_FILE} (copy the whole workshop/ folder)")
        path = path / PROGRESS_FILE
    try:
        found = _json_in(path.read_text(errors="replace"))
    except OSError as err:
        raise NotAStateFile(f"cannot be read ({err.strerror})") from None
    if isinstance(found, dict) and found.keys() & {"grades", "hints", "solutions_shown"}:
        grades = _from_progress(found)
    elif isinstance(found, list) and found:
        grades = _from_status_rows(found)
    else:
        raise NotAStateFile("not a workshop-status --json output nor a workshop/.progress.json")
    if bad := [n for n in grades if not EXERCISE.fullmatch(n)]:
        raise NotAStateFile(f"exercise numbers {bad} are not two digits")
    return grades


def read_room(folder: Path) -> tuple[list[Attendee], list[tuple[str, str]]]:
    """Every attendee in the folder, by name, and each entry skipped with why."""
    if not folder.is_dir():
        raise ScenarioError(f"--room {folder}: no such folder (it holds one state file per attendee, "
                            "e.g. alice.json; see scenarios/WORKSHOP.md, \"The room at a glance\")")
    attendees, skipped = [], []
    for entry in sorted(folder.iterdir()):
        try:
            attendees.append(Attendee(entry.stem if entry.is_file() else entry.name, entry.name, read_state(entry)))
        except NotAStateFile as why:
            skipped.append((entry.name, str(why)))
    return attendees, skipped


def passed_per_exercise(attendees: list[Attendee]) -> dict[str, int]:
    """How many passed each exercise that anyone in the room has checked."""
    tried = sorted({number for attendee in attendees for number in attendee.grades})
    return {number: sum(number in attendee.passed for attendee in attendees) for number in tried}


def room_json(attendees: list[Attendee], skipped: list[tuple[str, str]]) -> dict:
    return {"attendees": [attendee.to_json() for attendee in attendees],
            "passed_per_exercise": passed_per_exercise(attendees),
            "skipped": [{"file": name, "why": why} for name, why in skipped]}


def _when(iso: str | None, today: datetime.date) -> str:
    """A check's time as the facilitator reads a clock: local, the date only when not today."""
    try:
        moment = datetime.datetime.fromisoformat(iso).astimezone() if iso else None
    except (TypeError, ValueError):
        return str(iso)
    if moment is None:
        return "-"
    return moment.strftime("%H:%M" if moment.date() == today else "%Y-%m-%d %H:%M")


MARKS = {PASSED: "✔", "cannot run here": "–"}  # any other state checked: not yet, ✗


def room_table(attendees: list[Attendee], skipped: list[tuple[str, str]]) -> str:
    """A row per attendee, a column per exercise anyone checked, and the room's passes under each."""
    totals = passed_per_exercise(attendees)
    today = datetime.date.today()
    width = max([8, *(len(a.name) for a in attendees)])
    head = f"{'attendee':<{width}} {'passed':>6}  {'last checked':<12} {'state':<16} {'when':<16}"
    lines = [head + "".join(f" {n:>2}" for n in totals)]
    for attendee in attendees:
        number, grade = attendee.last or ("-", {"state": "-", "when": None})
        state = grade["state"] if len(grade["state"]) <= 16 else grade["state"][:15] + "…"
        cells = "".join(f" {MARKS.get(attendee.grades[n]['state'], '✗') if n in attendee.grades else '':>2}"
                        for n in totals)
        lines.append(f"{attendee.name:<{width}} {len(attendee.passed):>6}  {number:<12} {state:<16} "
                     f"{_when(grade['when'], today):<16}" + cells)
    lines.append(f"{'passed by':<{len(head)}}" + "".join(f" {count:>2}" for count in totals.values()))
    lines.append(f"\n{len(attendees)} attendee(s) · ✔ passed, ✗ not yet, – cannot run on their machine, "
                 "blank: never checked")
    lines += [f"skipped {name}: {why}" for name, why in skipped]
    return "\n".join(line.rstrip() for line in lines)
