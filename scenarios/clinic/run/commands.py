"""`list` and `run`: the runner's commands (scenarios/clinic/cli.py dispatches here), and the loop over
several scenarios that `figures` (scenarios/clinic/figures.py) runs too."""
from __future__ import annotations

import dataclasses
import json
import sys

from scenarios.clinic.run.result import JSON_SCHEMA
from scenarios.host import EXIT_BAD_INPUT, EXIT_CANNOT_RUN, EXIT_NOT_AS_EXPECTED, EXIT_OK


def arguments(name: str, parser) -> None:
    if name == "run":
        parser.add_argument("number", nargs="+", help="scenario numbers, e.g. 03, or 25 26 27 28, or 'all'")
        parser.add_argument("--variant", nargs="+", default=["broken", "fixed"],
                            help="variants to run (default: broken fixed; 'all' adds every other one)")
        parser.add_argument("--json", action="store_true", help="print the full result as JSON on stdout")


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
        numbers = list(discover()) if args.number == ["all"] else args.number
        variants = "all" if args.variant == ["all"] else args.variant
        runs = run_each(numbers, variants, None if args.json else sys.stderr, as_json=args.json)
        return conclude(runs, as_json=args.json)
    except ScenarioError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT


@dataclasses.dataclass
class Runs:
    """What run_each ran: a report and an exit status per scenario, and why each one not run could not."""
    numbers: list[str]
    reports: list[dict] = dataclasses.field(default_factory=list)
    statuses: list[int] = dataclasses.field(default_factory=list)
    not_run: dict[str, str] = dataclasses.field(default_factory=dict)


def run_each(numbers, variants, show, as_json: bool = False, ran=None) -> Runs:
    """Run the scenarios one after another, printing each verdict (the JSON waits for conclude);
    `ran(report)` is called as each one ends."""
    from scenarios.clinic.run.declarations import CannotRunHere
    from scenarios.clinic.run.report import verdict
    from scenarios.clinic.run.runner import run_scenario

    runs = Runs(list(numbers))
    for number in numbers:
        try:
            report = run_scenario(number, variants, show=show)
        except CannotRunHere as err:
            print(f"error: {err}", file=sys.stderr)
            runs.not_run[number] = err.why
            if as_json:  # the GPU check (`run 25 26 27 28 --json`) keeps why each was not run
                runs.reports.append({"scenario": number, "cannot_run": err.why, "variants": {}})
            runs.statuses.append(EXIT_CANNOT_RUN)
            continue
        runs.reports.append(report)
        runs.statuses.append(status_of(report))
        if not as_json:
            print("\n" + verdict(report), flush=True)
        if ran:
            ran(report)
    return runs


def conclude(runs: Runs, as_json: bool = False) -> int:
    """The reports as JSON, or the summary of several scenarios; the exit status of them all."""
    from scenarios.clinic.run.report import summary

    if as_json:
        for report in runs.reports:
            report["schema"] = JSON_SCHEMA
        print(json.dumps(runs.reports[0] if len(runs.numbers) == 1 and runs.reports else runs.reports, indent=1))
    elif len(runs.numbers) > 1:
        print("\n" + summary(runs.reports, runs.not_run))
    return combine(runs.statuses)
