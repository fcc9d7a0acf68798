"""`python -m scenarios new NN slug`: the skeleton of a new scenario, every file it adds, each one
saying NOT YET WRITTEN until its author writes it.  `make test` fails while any of them does
(tests/test_layout.py, and the skeleton's own tests/test_scenario_NN.py), naming the files left.

Nothing else is edited: checks, scenarios, exercises and tables are found by their files
(tests/test_new_scenario.py proves it on a copy of the repository).
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from scenarios.host import EXIT_BAD_INPUT, EXIT_OK

MARK = "NOT YET" + " WRITTEN"   # in two parts, so that this file is no skeleton itself
SLUG = re.compile(r"[a-z][a-z0-9_]{2,48}")
# The sections of a scenario's README, in order (tests/test_readme.py holds every README to them).
SECTIONS = ["Symptom", "Where you meet it", "Root cause", "Diagnose it in your own code",
            "The fix", "Myth check", "On Python 3.14 and later (forkserver by default)",
            "Measured", "References", "Files"]
# Every file a new scenario adds, {folder} its `NN_slug` and {number} its NN.  Beside them it may add
# more scripts and helpers in its own folder (myth_*.py, measure_*.py, _name.py), a fix
# (fixes/name.py with tests/test_fixes_name.py), and `make figures` / `make tables` rewrite the
# generated blocks; nothing else is edited by hand.
ADDS = ("scenarios/{folder}/README.md", "scenarios/{folder}/broken.py", "scenarios/{folder}/fixed.py",
        "scenarios/{folder}/scenario.toml", "scenarios/clinic/doctor/checks/s{folder}.py",
        "notebooks/{folder}.ipynb", "tests/test_scenario_{number}.py")
MAY_ADD = ("scenarios/{folder}/*", "fixes/*.py", "tests/test_fixes_*.py")
GENERATED = ("README.md", "scenarios/WORKSHOP.md", "scenarios/HEALTHY.md", "scenarios/{folder}/README.md",
             "scenarios/{folder}/measured/*")


def paths(folder: str) -> list[str]:
    return [name.format(folder=folder, number=folder[:2]) for name in ADDS]


def may_change(folder: str) -> list[str]:
    """Every file (glob patterns) that adding the scenario may add or edit: none other."""
    return paths(folder) + [name.format(folder=folder) for name in MAY_ADD + GENERATED]


def unwritten(root: Path, folder: str) -> list[str]:
    """The files of a scenario that are missing or still hold the skeleton's text."""
    return [name + ("" if (root / name).is_file() else " (missing)") for name in paths(folder)
            if not (root / name).is_file() or MARK in (root / name).read_text(encoding="utf-8", errors="replace")]


def files(number: str, slug: str) -> dict[str, str]:
    """Each file of the skeleton: its path under the repository, its text."""
    folder = f"{number}_{slug}"
    texts = [_readme(number), _script(number, "broken", "# BUG"), _script(number, "fixed", "# FIX"),
             _declaration(number), _check(number), _notebook(number), _test(number, folder)]
    return dict(zip(paths(folder), texts))


def _readme(number: str) -> str:
    from scenarios.clinic.blocks import block
    from scenarios.clinic.measured import MEASURED

    parts = [f"# {number} · {MARK}: the symptom, in the words a user searches for\n"]
    parts += [f"## {section}\n\n{MARK}.\n" for section in SECTIONS]
    at = 1 + SECTIONS.index("Measured")   # the block `python -m scenarios figures NN` fills
    parts[at] = f"## Measured\n\n{block(MEASURED, f'Not measured yet: python -m scenarios figures {number}.')}\n"
    return "\n".join(parts)


def _script(number: str, variant: str, marker: str) -> str:
    return (f'"""Scenario {number}, {variant}: {MARK}.\n\nThe same docstring in broken.py and fixed.py '
            'but for its first line."""\nimport sys\n\n\ndef main():\n'
            f'    {marker}: {MARK}; this stub fails until the scenario is written.\n'
            f'    print("scenario {number} is {MARK}: write {variant}.py", file=sys.stderr)\n'
            '    sys.exit(1)\n\n\nif __name__ == "__main__":\n    main()\n')


def _declaration(number: str) -> str:
    return (f'title = "{MARK}: the symptom in a line"\nneeds = []\nlimit_s = 60\n\n'
            "# The front page's \"Symptom you see → scenario\" table (scenarios/clinic/tables.py writes it):\n"
            "# the first row is the main symptom.\n[[symptoms]]\n"
            f"seen = '''{MARK}'''\ncause = '''{MARK}'''\n\n"
            '[variants.broken]\nexpect = "error"\n'
            f"evidence = '{MARK}: the line broken.py prints when it fails'\n\n"
            '[variants.fixed]\nexpect = "completed"\n'
            f"evidence = '{MARK}: the line fixed.py prints when it works'\n\n"
            "# The graded exercise (python -m scenarios check NN; scenarios/clinic/workshop/): an attempt is run as\n"
            "# fixed.py is and judged by [variants.fixed], plus what the runner measures itself.\n"
            f'[exercise]\nlesson = "{MARK}"\nhints = ["{MARK}", "{MARK}", "{MARK}"]\nmin_workers = 2\n')


def _check(number: str) -> str:
    return (f'"""{number} · {MARK}: the cause `explain` quotes beside a matched text."""\n'
            "from scenarios.clinic.doctor.findings import finder\n\n"
            f'SCENARIO = "{number}"\nFIXES = {{"{MARK.lower().replace(" ", "-")}": "{MARK}"}}\n'
            "# What it finds comes from one or more of (checks/__init__.py, CONTRACT): a loader (static, measured),\n"
            "# a running job (running), the user's own run (observed), a pasted log (the texts ERRORS, LOG_TEXTS,\n"
            "# LIKELY, ASK, IN_A_RANK, FRAMES, and pasted for what a program printed: doctor/printed.py reads it).\n"
            f"# A library's own messages that only this scenario is about: scenarios/{number}_<slug>/catalogue.txt.\n"
            "# How often healthy loaders and jobs trip its rules: {loaders} and {jobs} are filled from the\n"
            "# recorded runs (scenarios/clinic/doctor/healthy.py).\n"
            f'HEALTHY = "{MARK}: {{loaders}}"\n_found = finder(SCENARIO, FIXES)\n')


def _notebook(number: str) -> str:
    cell = {"cell_type": "markdown", "id": f"skeleton{number}", "metadata": {},
            "source": [f"# Scenario {number} · {MARK}\n"]}
    notebook = {"cells": [cell], "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                                             "name": "python3"}},
                "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"


def _test(number: str, folder: str) -> str:
    return (f'"""Scenario {number}: what the runs must show beyond their declaration. {MARK}."""\n'
            "from conftest import REPO_ROOT\n"
            "from scenarios.clinic.skeleton import unwritten\n\n\n"
            f"def test_scenario_{number}_is_written():\n"
            f'    left = unwritten(REPO_ROOT, "{folder}")\n'
            f'    assert not left, f"scenario {number} is not yet written: {{\', \'.join(left)}}"\n')


def write(root: Path, number: str, slug: str) -> list[str]:
    """Write the skeleton under `root`; ValueError (bad input) where the number or a file is taken."""
    if not re.fullmatch(r"\d\d", number) or not SLUG.fullmatch(slug):
        raise ValueError(f"a scenario is NN slug: two digits, then lower-case words joined by _ (got {number} {slug})")
    taken = sorted(p.name for p in (root / "scenarios").glob(f"{number}_*"))
    if taken:
        raise ValueError(f"scenario {number} exists: scenarios/{taken[0]}")
    written = files(number, slug)
    clash = [name for name in written if (root / name).exists()]
    if clash:
        raise ValueError(f"would write over {', '.join(clash)}")
    for name, text in written.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return list(written)


def arguments(name: str, parser) -> None:
    parser.add_argument("number", help="the new scenario's number, two digits (34)")
    parser.add_argument("slug", help="its folder's name after the number: lower-case words joined by _")


def run(args) -> int:
    from scenarios.clinic import REPO_ROOT

    try:
        written = write(REPO_ROOT, args.number, args.slug)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print("wrote, each " + MARK + " until you write it (make test names those left):")
    print("\n".join(f"  {name}" for name in written))
    return EXIT_OK
