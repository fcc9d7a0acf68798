"""Command line of the runner.

    python -m scenarios list
    python -m scenarios run 03 [--variant broken fixed | all] [--json]
    python -m scenarios run all          # every scenario, then a summary table
    python -m scenarios doctor

Exit status of `run`: 0 when every variant showed what its declaration says
(broken reproduced, fixed fixed), 1 when one did not, 2 for bad input,
3 when this platform cannot run the scenario.
"""
import argparse
import importlib.util
import json
import sys

EXIT_MISMATCH, EXIT_BAD_INPUT, EXIT_CANNOT_RUN = 1, 2, 3


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scenarios", description="DataLoader Clinic runner")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="list the scenarios")
    commands.add_parser("doctor", help="what this machine can reproduce")
    run = commands.add_parser("run", help="run a scenario's variants and judge them")
    run.add_argument("number", help="scenario number, e.g. 03, or 'all'")
    run.add_argument("--variant", nargs="+", default=["broken", "fixed"],
                     help="variants to run (default: broken fixed; 'all' adds the myth checks)")
    run.add_argument("--json", action="store_true", help="print the full result as JSON on stdout")
    args = parser.parse_args(argv)

    missing = [m for m in ("psutil", "torch", "numpy") if importlib.util.find_spec(m) is None]
    if missing:
        print(f"error: missing Python package(s): {', '.join(missing)}. "
              "Run `make setup` (or `pip install -r requirements.txt`).", file=sys.stderr)
        return EXIT_BAD_INPUT
    from scenarios.runner import CannotRunHere, ScenarioError, discover, run_scenario, verdict

    if args.command == "list":
        for number, scenario in discover().items():
            print(f"  {number}  {scenario.title}")
        return 0
    if args.command == "doctor":
        from scenarios.doctor import main as doctor
        return doctor()

    numbers = list(discover()) if args.number == "all" else [args.number]
    variants = "all" if args.variant == ["all"] else args.variant
    reports, status = [], 0
    for number in numbers:
        try:
            report = run_scenario(number, variants, show=None if args.json else sys.stderr)
        except CannotRunHere as err:
            print(f"error: {err}", file=sys.stderr)
            status = max(status, EXIT_CANNOT_RUN) if len(numbers) == 1 else status
            continue
        except ScenarioError as err:
            print(f"error: {err}", file=sys.stderr)
            return EXIT_BAD_INPUT
        reports.append(report)
        if not args.json:
            print("\n" + verdict(report), flush=True)
        if report["cannot_run"]:
            status = max(status, EXIT_CANNOT_RUN)
        elif not all(run["as_expected"] for run in report["variants"].values()):
            status = EXIT_MISMATCH
    if args.json:
        print(json.dumps(reports[0] if len(numbers) == 1 and reports else reports, indent=1))
    elif len(numbers) > 1:
        print("\nSummary")
        for report in reports:
            marks = "  ".join(f"{name} {'✔' if run['as_expected'] else '✘'} {run['outcome']} {run['seconds']:.0f}s"
                              for name, run in report["variants"].items())
            print(f"  {report['scenario']}  {report['title'][:60]:<60}  {marks}")
    return status


if __name__ == "__main__":
    sys.exit(main())
