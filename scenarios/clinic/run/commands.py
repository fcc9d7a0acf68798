"""`list`, `run` and `figures`: the runner's commands (scenarios/clinic/cli.py dispatches here)."""
from __future__ import annotations

import functools
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
    elif name == "figures":
        parser.add_argument("numbers", nargs="*", default=["all"], help="scenario numbers (default: all)")
        parser.add_argument("--take-in", metavar="ARCHIVE",
                            help="run nothing: store the runs of a `gpu-check` archive (.tar.gz) as data, "
                                 "then rewrite what is rendered from them")


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
        if args.command == "figures" and args.take_in:
            return _take_in(args.take_in)
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
    from scenarios.clinic.run.report import summary, verdict
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
        if figures:  # stored at once: an interrupted `figures all` keeps every run it finished
            _store(report=report)
    if figures:
        for number, why in not_run.items():
            _store(number=number, why=why)
        _write_tables()
    if as_json:
        for report in reports:
            report["schema"] = JSON_SCHEMA
        print(json.dumps(reports[0] if len(numbers) == 1 and reports else reports, indent=1))
    elif len(numbers) > 1:
        print("\n" + summary(reports, not_run))
    return combine(statuses)


@functools.cache
def _this_machine():
    from scenarios.clinic import measured
    from scenarios.clinic.run.report import torch_version
    return measured.this_machine(torch_version())


def _store(report: dict | None = None, number: str = "", why: str = "") -> None:
    """A run (or why it could not run) as data beside its scenario: measured/<kind>.json."""
    from scenarios.clinic import measured
    from scenarios.clinic.run.declarations import get_scenario

    record = (measured.from_report(report, _this_machine()) if report
              else measured.Measured(number, _this_machine(), {}, cannot_run=why))
    written = measured.keep(get_scenario(record.scenario).path, record)
    print(f"  stored {_shown(written)}" if written else f"  kept the stored run of scenario {record.scenario} "
          f"({record.kind}): figures of a machine of its kind that could run it", flush=True)


def _take_in(archive: str) -> int:
    from scenarios.clinic import measured

    try:
        written = measured.take_in_archive(archive)
    except measured.ArchiveError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for path in written:
        print(f"  stored {_shown(path)}", flush=True)
    _write_tables()
    return EXIT_OK


def _shown(path) -> str:
    from scenarios.clinic import REPO_ROOT
    return str(path.relative_to(REPO_ROOT))


def _write_tables() -> None:
    from scenarios.clinic import tables

    for block in tables.write():
        print(f"  wrote {block}", flush=True)
