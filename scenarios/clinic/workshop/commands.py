"""practice, check, hint, solution, workshop-status (one laptop, or with --room DIR the whole room: room.py):
the workshop's commands."""
from __future__ import annotations

import json
import sys

from scenarios.host import EXIT_BAD_INPUT, EXIT_CANNOT_RUN, EXIT_OK


def arguments(name: str, parser) -> None:
    if name != "workshop-status":
        parser.add_argument("number", help="scenario number, e.g. 05")
    if name == "check":
        parser.add_argument("file", nargs="?", help="the attempt (default: workshop/NN_slug.py)")
    if name == "solution":
        parser.add_argument("--yes", action="store_true", help="show it without asking")
    if name in ("check", "workshop-status"):
        parser.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    if name == "workshop-status":
        parser.add_argument("--room", metavar="DIR", help="the whole room: DIR holds each attendee's state "
                            "(NAME.json: their workshop-status --json or workshop/.progress.json)")


def run(args) -> int:
    from scenarios.clinic import workshop
    from scenarios.clinic.run.declarations import CannotRunHere, ScenarioError

    try:
        if args.command == "practice":
            print(workshop.practice(args.number))
        elif args.command == "hint":
            print(workshop.hint(args.number))
        elif args.command == "solution":
            return _solution(args)
        elif args.command == "workshop-status" and args.room:
            return _room(args)
        elif args.command == "workshop-status":
            rows = workshop.status()
            print(json.dumps(rows, indent=1) if args.json else workshop.status_table(rows))
        else:
            graded = workshop.check(args.number, args.file, show=None if args.json else sys.stderr)
            print(json.dumps(graded.to_json(), indent=1) if args.json else "\n" + workshop.grade_text(graded),
                  flush=True)
            return graded.exit_status
    except CannotRunHere as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    except ScenarioError as err:
        workshop.say_bad_input(err)
        return EXIT_BAD_INPUT
    return EXIT_OK


def _solution(args) -> int:
    from scenarios.clinic import workshop
    from scenarios.clinic.run.declarations import get_scenario

    scenario = get_scenario(args.number)
    if not args.yes:
        if not sys.stdin.isatty():
            print(f"The solution of exercise {scenario.number} is our diff; to see it: "
                  f"make solution-{scenario.number} SHOW=1 (or add --yes)", file=sys.stderr)
            return EXIT_OK
        answer = input(f"Show our fix for exercise {scenario.number}? Try `make hint-{scenario.number}` first. [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            return EXIT_OK
    print(workshop.solution(scenario.number))
    return EXIT_OK


def _room(args) -> int:
    from pathlib import Path

    from scenarios.clinic.run.declarations import ScenarioError
    from scenarios.clinic.workshop import room

    attendees, skipped = room.read_room(Path(args.room))
    if not attendees:
        why = "".join(f"; {name}: {reason}" for name, reason in skipped[:5])
        raise ScenarioError(f"--room {args.room}: no attendee's state in it{why or ' (it is empty)'}. Each attendee "
                            "hands in `python -m scenarios workshop-status --json` saved as NAME.json")
    print(json.dumps(room.room_json(attendees, skipped), indent=1) if args.json
          else room.room_table(attendees, skipped))
    return EXIT_OK
