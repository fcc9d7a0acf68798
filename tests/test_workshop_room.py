"""`workshop-status --room DIR`: three simulated laptops hand in their state in each of the ways
scenarios/WORKSHOP.md offers (workshop-status --json saved or pasted into a chat, a copied
workshop/.progress.json, the whole workshop/ folder); what is not a state is named and skipped.
And `practice` writes broken.py byte for byte, so that the attempt's diff is the fix alone.
Nothing here runs a scenario: grades are recorded as `make check-NN` records them.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO_ROOT
from scenarios.clinic import workshop
from scenarios.clinic.run.declarations import discover
from scenarios.clinic.workshop import room, rules

SCENARIOS = discover()


def cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "scenarios", *args], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


def laptop(folder, **states):
    """An attendee's workshop/ folder after practising and checking each exercise: ex05="passed"."""
    for key, state in states.items():
        number = key.removeprefix("ex")
        workshop.practice(number, folder=folder)
        text = next(folder.glob(f"{number}_*.py")).read_text()
        workshop.record_grade(SCENARIOS[number], workshop.Grade(number, "attempt", state, [], {"seconds": 3}),
                              text, folder=folder)
    return folder


@pytest.fixture
def classroom(tmp_path):
    """alice pastes her --json into the chat, bob copies .progress.json, carol her workshop/ folder."""
    alice = laptop(tmp_path / "alice", ex12=workshop.PASSED, ex05=workshop.PASSED)
    bob = laptop(tmp_path / "bob", ex05=workshop.NOT_YET, ex12=workshop.PASSED)
    carol = laptop(tmp_path / "carol", ex04=workshop.CANNOT_RUN)
    handed_in = tmp_path / "room"
    handed_in.mkdir()
    status = cli("workshop-status", "--json", env={rules.WORKSHOP_ENV: str(alice)})
    assert status.returncode == 0, status.stderr
    (handed_in / "alice.json").write_text(f"[alice@laptop ~]$ python -m scenarios workshop-status --json\n```json\n"
                                          f"{status.stdout}```\n")
    (handed_in / "bob.json").write_text((bob / rules.PROGRESS_FILE).read_text())
    shutil.copytree(carol, handed_in / "carol")
    (handed_in / "notes.txt").write_text("remember the coffee\n")
    (handed_in / "dave.json").write_text(json.dumps({"model": "resnet"}))
    (handed_in / "eve.json").write_bytes(b"\x80\x02\xff binary")
    return handed_in


def test_the_room_reads_each_way_of_handing_in(classroom):
    attendees, skipped = room.read_room(classroom)
    by_name = {a.name: a for a in attendees}
    assert list(by_name) == ["alice", "bob", "carol"]
    assert by_name["alice"].passed == ["05", "12"] and by_name["bob"].passed == ["12"]
    assert by_name["bob"].grades["05"]["state"] == workshop.NOT_YET
    assert by_name["carol"].last[0] == "04" and by_name["carol"].last[1]["state"] == workshop.CANNOT_RUN
    assert room.passed_per_exercise(attendees) == {"04": 0, "05": 1, "12": 2}
    assert [name for name, _ in skipped] == ["dave.json", "eve.json", "notes.txt"]


def test_the_table_has_a_row_per_attendee_and_the_rooms_passes_per_exercise(classroom):
    done = cli("workshop-status", "--room", str(classroom))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[-3:] == ["04", "05", "12"]
    rows = {line.split()[0]: line.split() for line in lines[1:4]}
    assert rows["alice"][1] == "2" and rows["bob"][1] == "1" and rows["carol"][1:4] == ["0", "04", "cannot"]
    assert lines[4].split() == ["passed", "by", "0", "1", "2"]
    assert "skipped notes.txt: not a workshop-status --json output" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_the_rooms_json(classroom):
    done = cli("workshop-status", "--room", str(classroom), "--json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["passed_per_exercise"] == {"04": 0, "05": 1, "12": 2}
    bob = next(a for a in shown["attendees"] if a["name"] == "bob")
    assert bob["file"] == "bob.json" and bob["passed"] == ["12"] and bob["last"]["exercise"] in ("05", "12")
    assert bob["last"]["when"].endswith("+00:00")
    assert {s["file"] for s in shown["skipped"]} == {"dave.json", "eve.json", "notes.txt"}


def test_make_passes_the_room_on(classroom):
    done = subprocess.run(["make", "--no-print-directory", f"PYTHON={sys.executable}", "workshop-status",
                           f"ROOM={classroom}"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("attendee") and "passed by" in done.stdout


@pytest.mark.parametrize("what", ["missing", "empty", "nothing readable"])
def test_a_room_without_any_state_is_bad_input_in_one_line(tmp_path, what):
    folder = tmp_path / "room"
    if what != "missing":
        folder.mkdir()
    if what == "nothing readable":
        (folder / "alice.json").write_text("[1, 2, 3]")
    done = cli("workshop-status", "--room", str(folder))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: --room ") and len(done.stderr.strip().splitlines()) == 1
    assert ("alice.json: a list, but not of workshop-status rows" in done.stderr) == (what == "nothing readable")


def test_the_laptops_json_says_when_each_exercise_was_checked(tmp_path):
    laptop(tmp_path, ex12=workshop.PASSED)
    rows = {row["exercise"]: row for row in workshop.status(folder=tmp_path)}
    assert rows["12"]["state"] == workshop.PASSED and rows["12"]["when"].endswith("+00:00")
    assert rows["05"]["when"] is None and rows["05"]["state"] == "not started"


@pytest.mark.parametrize("number", list(SCENARIOS))
def test_practice_writes_broken_py_byte_for_byte(number, tmp_path):
    said = workshop.practice(number, folder=tmp_path)
    attempt = next(tmp_path.glob(f"{number}_*.py"))
    assert attempt.read_bytes() == SCENARIOS[number].script("broken").read_bytes()
    assert f"diff -u scenarios/{SCENARIOS[number].slug}/broken.py" in said
