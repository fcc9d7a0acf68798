"""practice, check, hint, solution, workshop-status: the workshop's commands."""
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
