"""`list`, `run` and `figures`: the runner's commands (scenarios/clinic/cli.py dispatches here)."""
from __future__ import annotations

import json
import sys

from scenarios.host import EXIT_BAD_INPUT, EXIT_CANNOT_RUN, EXIT_NOT_AS_EXPECTED, EXIT_OK


def arguments(name: str, parser) -> None:
    if name == "run":
        parser.add_argument("number", nargs="+", help="scenario numbers, e.g. 03, or 25 26 27 28, or 'all'")
        parser.add_argument("--variant", nargs="+", default=["broken", "fixed"],
                            help="variants to run (default: broken fixed; 'all' adds every other one)")
        parser.add_argument("--json", action="store_true", help="print the full result as JSON on stdout")
    elif name == "figures":
        parser.add_argument("numbers", nargs="*", default=["all"], help="scenario numbers (default: all)")


def status_of(report: dict) -> int:
    if report["cannot_run"]:
        return EXIT_CANNOT_RUN
    return EXIT_OK if all(run["as_expected"] for run in report["variants"].values()) else EXIT_NOT_AS_EXPECTED


def combine(statuses: list[int]) -> int:
    """Not as it should be beats cannot-run-here, which beats ok."""
    if EXIT_NOT_AS_EXPECTED in statuses:
        return EXIT_NOT_AS_EXPECTED
    return EXIT_CANNOT_RUN if EXIT_CANNOT_RUN in statuses else EXIT_OK


def run(args) -> int:
    from scenarios.clinic.run.declarations import ScenarioError, discover

    try:
        if args.command == "list":
            for number, scenario in discover().items():
                print(f"  {number}  {scenario.title}")
            return EXIT_OK
        if args.command == "figures":
            numbers = list(discover()) if args.numbers == ["all"] else args.numbers
            return _run_many(numbers, "all", sys.stderr, figures=True, as_json=False)
        numbers = list(discover()) if args.number == ["all"] else args.number
        variants = "all" if args.variant == ["all"] else args.variant
        return _run_many(numbers, variants, None if args.json else sys.stderr, figures=False, as_json=args.json)
    except ScenarioError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _run_many(numbers, variants, show, figures: bool, as_json: bool) -> int:
    from scenarios.clinic.run.declarations import CannotRunHere
    from scenarios.clinic.run.report import summary, verdict, write_measured
    from scenarios.clinic.run.runner import run_scenario

    reports, statuses, not_run = [], [], {}
    for number in numbers:
        try:
            report = run_scenario(number, variants, show=show)
        except CannotRunHere as err:
            print(f"error: {err}", file=sys.stderr)
            not_run[number] = err.why
            if as_json:  # the GPU check (`run 25 26 27 28 --json`) keeps why each was not run
                reports.append({"scenario": number, "cannot_run": err.why, "variants": {}})
            statuses.append(EXIT_CANNOT_RUN)
            continue
        reports.append(report)
        statuses.append(status_of(report))
        if not as_json:
            print("\n" + verdict(report), flush=True)
        if figures:
            print(f"  wrote the Measured block of {write_measured(report)}", flush=True)
    if figures:
        _write_tables(not_run)
    if as_json:
        print(json.dumps(reports[0] if len(numbers) == 1 and reports else reports, indent=1))
    elif len(numbers) > 1:
        print("\n" + summary(reports, not_run))
    return combine(statuses)


def _write_tables(not_run: dict[str, str]) -> None:
    """After the Measured blocks, the tables made from them, so that no table waits for a run of all."""
    from scenarios.clinic import tables
    from scenarios.clinic.run.report import write_not_run

    for number, why in not_run.items():
        written = write_not_run(number, why)
        print(f"  wrote why it is empty into the Measured block of {written}" if written else
              f"  kept the Measured block of scenario {number}: figures of a machine that could run it", flush=True)
    for block in tables.write():
        print(f"  wrote the table {block}", flush=True)
