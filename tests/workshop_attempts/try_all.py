"""Grade every workshop attempt in corpus/README.md's table once, one after another.

    python tests/workshop_attempts/try_all.py            # every row; exit 1 if a verdict is not the expected one
    python tests/workshop_attempts/try_all.py 19_ 23_    # only the rows whose file name holds one of these
    python tests/workshop_attempts/try_all.py --write    # also put each first sentence in the table

Each attempt is one `python -m scenarios check NN FILE --json` run, the way an attendee's is.
The table is the one list of attempts and of what each should get: a correct alternative
passes, a partial fix or a shortcut does not.  Counts at the end, by kind.
"""
import json
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TABLE = Path(__file__).resolve().parent / "corpus" / "README.md"
ROW = re.compile(r"^\| `(?P<file>[^`]+)` \| (?P<exercise>\d\d) \| (?P<kind>alt|partial|shortcut) \| "
                 r"(?P<expected>passed|not yet) \| (?P<said>.*) \|$")
WANTED = {"alt": "passed", "partial": "not yet", "shortcut": "not yet"}
COUNTED = {"alt": "alternatives passed", "partial": "partial fixes rejected", "shortcut": "shortcuts rejected"}


def rows(text):
    return [match.groupdict() for match in map(ROW.match, text.splitlines()) if match]


def grade(row):
    """(verdict, seconds, first problem sentence) of one run of the grader."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "scenarios", "check", row["exercise"], row["file"], "--json"],
                          cwd=REPO, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    try:
        answer = json.loads(done.stdout)
    except json.JSONDecodeError:  # bad input (status 2): the grader's one line on stderr
        return f"status {done.returncode}", seconds, done.stderr.strip().splitlines()[-1:] or [""]
    return answer["state"], seconds, (answer["problems"] or ["—"])[0]


def main(args):
    write = "--write" in args
    only = [arg for arg in args if arg != "--write"]
    text = TABLE.read_text()
    chosen = [row for row in rows(text) if not only or any(part in row["file"] for part in only)]
    tally, wrong, began = {kind: [0, 0] for kind in COUNTED}, [], time.perf_counter()
    for row in chosen:
        verdict, seconds, said = grade(row)
        said = said if isinstance(said, str) else said[0]
        hit = verdict == row["expected"]
        tally[row["kind"]][0] += verdict == WANTED[row["kind"]]
        tally[row["kind"]][1] += 1
        wrong += [] if hit else [row["file"]]
        print(f"{'ok  ' if hit else 'MISS'} {verdict:8} {seconds:5.1f} s  {row['file']}\n      {said}", flush=True)
        if write:
            old = f"| {row['expected']} | {row['said']} |"
            line = next(line for line in text.splitlines() if f"`{row['file']}`" in line)
            text = text.replace(line, line.replace(old, f"| {row['expected']} | {said.replace('|', '/')} |"))
    if write:
        TABLE.write_text(text)
    print(f"\n{len(chosen)} attempt{'s' if len(chosen) != 1 else ''} in {time.perf_counter() - began:.0f} s: " +
          ", ".join(f"{COUNTED[kind]} {got}/{of}" for kind, (got, of) in tally.items() if of))
    if wrong:
        print(f"{len(wrong)} verdicts differ from the table's: " + ", ".join(wrong))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
