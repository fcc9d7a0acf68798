"""The command line of DataLoader Clinic.

    python -m scenarios list
    python -m scenarios run 03 [--variant broken fixed | all] [--json]
    python -m scenarios run all          # every scenario, then a summary table
    python -m scenarios figures [03 … | all]   # rewrite each README's Measured block from a run
    python -m scenarios doctor           # what this machine can reproduce
    python -m scenarios doctor train.py:make_loader [--json] [--no-probe]   # examine your DataLoader
    python -m scenarios bench [--json] [--quick]   # our fixes against the alternatives (1: a goal not met)

Workshop exercises (scenarios/workshop.py, scenarios/WORKSHOP.md):
    python -m scenarios practice 05      # copy broken.py to workshop/05_….py (never over an attempt)
    python -m scenarios check 05 [FILE] [--json]   # run the attempt, grade it against fixed's declaration
    python -m scenarios hint 05          # the next of three hints
    python -m scenarios solution 05 [--yes]        # our fix, diff -u broken.py fixed.py
    python -m scenarios workshop-status [--json]   # every exercise: not started / not yet / passed

Exit status, the same for every command: 0 as it should be, 1 not as it should be
(a variant did not show what its declaration says; for the doctor on a loader: risks found;
for check: the attempt is not fixed yet),
2 bad input, 3 cannot run here.  Stopped by Ctrl-C, SIGTERM or SIGHUP, it first ends and
reaps the run in progress, then exits as the shell expects of a stopped command (130, 143, 129).
"""
import argparse
import importlib.util
import json
import signal
import sys

from scenarios.host import EXIT_BAD_INPUT, EXIT_CANNOT_RUN, EXIT_NOT_AS_EXPECTED, EXIT_OK


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m scenarios", description="DataLoader Clinic")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="list the scenarios")
    doctor = commands.add_parser("doctor", help="what this machine can reproduce; with FILE.py:FUNCTION, "
                                 "examine the DataLoader that function returns")
    doctor.add_argument("loader", nargs="?", metavar="FILE.py:FUNCTION",
                        help="a function that takes no arguments and returns your DataLoader")
    doctor.add_argument("--json", action="store_true", help="print the findings as JSON on stdout")
    doctor.add_argument("--no-probe", action="store_true",
                        help="static checks only: do not iterate the loader in a child process")
    run = commands.add_parser("run", help="run a scenario's variants and judge them")
    run.add_argument("number", help="scenario number, e.g. 03, or 'all'")
    run.add_argument("--variant", nargs="+", default=["broken", "fixed"],
                     help="variants to run (default: broken fixed; 'all' adds every other one)")
    run.add_argument("--json", action="store_true", help="print the full result as JSON on stdout")
    figures = commands.add_parser("figures", help="run every variant and rewrite the READMEs' Measured blocks")
    figures.add_argument("numbers", nargs="*", default=["all"], help="scenario numbers (default: all)")
    bench = commands.add_parser("bench", help="benchmark our fixes against what users pick instead")
    bench.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    bench.add_argument("--quick", action="store_true", help="reduced sizes, seconds; stores no results")
    practice = commands.add_parser("practice", help="start an exercise: copy broken.py to workshop/")
    practice.add_argument("number", help="scenario number, e.g. 05")
    check = commands.add_parser("check", help="grade an attempt against the scenario's fixed declaration")
    check.add_argument("number", help="scenario number, e.g. 05")
    check.add_argument("file", nargs="?", help="the attempt (default: workshop/NN_slug.py)")
    check.add_argument("--json", action="store_true", help="print the grade as JSON on stdout")
    hint = commands.add_parser("hint", help="the next of the exercise's three hints")
    hint.add_argument("number", help="scenario number, e.g. 05")
    solution = commands.add_parser("solution", help="show our fix (diff -u broken.py fixed.py)")
    solution.add_argument("number", help="scenario number, e.g. 05")
    solution.add_argument("--yes", action="store_true", help="show it without asking")
    status = commands.add_parser("workshop-status", help="every exercise's state, from workshop/")
    status.add_argument("--json", action="store_true", help="print the table as JSON on stdout")
    return parser


def _workshop(args) -> int:
    """practice, check, hint, solution, workshop-status (scenarios/workshop.py)."""
    from scenarios import workshop
    from scenarios.declarations import CannotRunHere, ScenarioError, get_scenario

    try:
        if args.command == "practice":
            print(workshop.practice(args.number))
        elif args.command == "hint":
            print(workshop.hint(args.number))
        elif args.command == "solution":
            scenario = get_scenario(args.number)
            if not args.yes:
                if not sys.stdin.isatty():
                    print(f"The solution of exercise {scenario.number} is our diff; to see it: "
                          f"make solution-{scenario.number} SHOW=1 (or add --yes)", file=sys.stderr)
                    return EXIT_OK
                answer = input(f"Show our fix for exercise {scenario.number}? Try `make hint-{scenario.number}` "
                               "first. [y/N] ")
                if answer.strip().lower() not in ("y", "yes"):
                    return EXIT_OK
            print(workshop.solution(scenario.number))
        elif args.command == "workshop-status":
            rows = workshop.status()
            print(json.dumps(rows, indent=1) if args.json else workshop.status_table(rows))
        else:  # check
            graded = workshop.check(args.number, args.file, show=None if args.json else sys.stderr)
            if args.json:
                print(json.dumps(graded.to_json(), indent=1))
            else:
                print("\n" + workshop.grade_text(graded), flush=True)
            return graded.exit_status
    except CannotRunHere as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    except ScenarioError as err:
        workshop.say_bad_input(err)
        return EXIT_BAD_INPUT
    return EXIT_OK


def _status(report: dict) -> int:
    if report["cannot_run"]:
        return EXIT_CANNOT_RUN
    return EXIT_OK if all(run["as_expected"] for run in report["variants"].values()) else EXIT_NOT_AS_EXPECTED


def _combine(statuses: list[int]) -> int:
    """Not as it should be beats cannot-run-here, which beats ok."""
    if EXIT_NOT_AS_EXPECTED in statuses:
        return EXIT_NOT_AS_EXPECTED
    return EXIT_CANNOT_RUN if EXIT_CANNOT_RUN in statuses else EXIT_OK


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    missing = [m for m in ("psutil", "torch", "numpy") if importlib.util.find_spec(m) is None]
    if missing:
        print(f"error: missing Python package(s): {', '.join(missing)}. "
              "Run `make setup` (or `pip install -r requirements.txt`).", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.command == "bench":
        from scenarios.bench import main as bench
        return bench(quick=args.quick, as_json=args.json)
    if args.command in ("practice", "check", "hint", "solution", "workshop-status"):
        return _workshop(args)
    from scenarios.declarations import CannotRunHere, ScenarioError, discover
    from scenarios.report import summary, verdict, write_measured, write_timings
    from scenarios.runner import run_scenario

    try:
        if args.command == "list":
            for number, scenario in discover().items():
                print(f"  {number}  {scenario.title}")
            return EXIT_OK
        if args.command == "doctor" and args.loader:
            from scenarios.checkup import main as checkup
            return checkup(args.loader, as_json=args.json, probe=not args.no_probe)
        if args.command == "doctor":
            if args.json or args.no_probe:
                print("error: --json and --no-probe apply to a loader: doctor FILE.py:FUNCTION", file=sys.stderr)
                return EXIT_BAD_INPUT
            from scenarios.doctor import main as doctor
            return doctor()
        if args.command == "figures":
            numbers = list(discover()) if args.numbers == ["all"] else args.numbers
            variants, show = "all", sys.stderr
        else:
            numbers = list(discover()) if args.number == "all" else [args.number]
            variants = "all" if args.variant == ["all"] else args.variant
            show = None if args.json else sys.stderr
        reports, statuses, not_run = [], [], {}
        for number in numbers:
            try:
                report = run_scenario(number, variants, show=show)
            except CannotRunHere as err:
                print(f"error: {err}", file=sys.stderr)
                not_run[number] = str(err).split("cannot run here: ", 1)[-1]
                statuses.append(EXIT_CANNOT_RUN)
                continue
            reports.append(report)
            statuses.append(_status(report))
            if not args.command == "run" or not args.json:
                print("\n" + verdict(report), flush=True)
            if args.command == "figures":
                print(f"  wrote the Measured block of {write_measured(report)}", flush=True)
    except ScenarioError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.command == "figures" and args.numbers == ["all"] and reports and not not_run:
        print(f"  wrote the timings of {write_timings(reports)}", flush=True)
    if args.command == "run" and args.json:
        print(json.dumps(reports[0] if len(numbers) == 1 and reports else reports, indent=1))
    elif len(numbers) > 1:
        print("\n" + summary(reports, not_run))
    return _combine(statuses)


def _end_runs_on_termination() -> None:
    """`timeout`, a closed terminal and a cancelled CI job send SIGTERM or SIGHUP: end as Ctrl-C
    does, through each run's cleanup.  Otherwise the script, a hang by design in some variants,
    would outlive this command with nobody left to enforce its limit.  Command line only: a
    notebook or pytest using the runner keeps its own signal handling."""
    endings = [getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]

    def end(signum, frame):
        for ending in endings:  # once: a second signal must not cut the cleanup short
            signal.signal(ending, signal.SIG_IGN)
        raise SystemExit(128 + signum)

    for ending in endings:
        signal.signal(ending, end)


if __name__ == "__main__":
    _end_runs_on_termination()
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # the run in progress has been ended and reaped on the way here
        print("interrupted", file=sys.stderr)
        sys.exit(130)
