"""`figures`: run every variant of the scenarios asked for, keep each run as data beside its scenario
(measured/cpu.json, gpu.json: measured.py), then rewrite what is rendered from the stored runs
(tables.py).  With `--take-in ARCHIVE` it runs nothing and stores the runs of a `gpu-check` archive."""
from __future__ import annotations

import functools
import sys

from scenarios.clinic import REPO_ROOT, measured, tables
from scenarios.clinic.run.commands import conclude, run_each
from scenarios.clinic.run.declarations import ScenarioError, discover, get_scenario
from scenarios.clinic.run.report import torch_version
from scenarios.host import EXIT_BAD_INPUT, EXIT_OK


def arguments(name: str, parser) -> None:
    parser.add_argument("numbers", nargs="*", default=["all"], help="scenario numbers (default: all)")
    parser.add_argument("--take-in", metavar="ARCHIVE",
                        help="run nothing: store the runs of a `gpu-check` archive (.tar.gz) as data, "
                             "then rewrite what is rendered from them")


def run(args) -> int:
    try:
        if args.take_in:
            return _take_in(args.take_in)
        numbers = list(discover()) if args.numbers == ["all"] else args.numbers
        # each run stored as it ends: an interrupted `figures all` keeps every run it finished
        runs = run_each(numbers, "all", sys.stderr, ran=_store)
        for number, why in runs.not_run.items():
            _store(number=number, why=why)
        _write_tables()
        return conclude(runs)
    except ScenarioError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT


@functools.cache
def _this_machine():
    return measured.this_machine(torch_version())


def _store(report: dict | None = None, number: str = "", why: str = "") -> None:
    """A run (or why it could not run) as data beside its scenario: measured/<kind>.json."""
    record = (measured.from_report(report, _this_machine()) if report
              else measured.Measured(number, _this_machine(), {}, cannot_run=why))
    written = measured.keep(get_scenario(record.scenario).path, record)
    print(f"  stored {_shown(written)}" if written else f"  kept the stored run of scenario {record.scenario} "
          f"({record.kind}): figures of a machine of its kind that could run it", flush=True)


def _take_in(archive: str) -> int:
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
    return str(path.relative_to(REPO_ROOT))


def _write_tables() -> None:
    for block in tables.write():
        print(f"  wrote {block}", flush=True)
