"""Command line of the runner.

    python -m scenarios list
    python -m scenarios run 03 [--variant broken fixed | all] [--json]

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
    run = commands.add_parser("run", help="run a scenario's variants and judge them")
    run.add_argument("number", help="scenario number, e.g. 03")
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
    variants = "all" if args.variant == ["all"] else args.variant
    try:
        report = run_scenario(args.number, variants, show=None if args.json else sys.stderr)
    except ScenarioError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_CANNOT_RUN if isinstance(err, CannotRunHere) else EXIT_BAD_INPUT
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print("\n" + verdict(report))
    if report["cannot_run"]:
        return EXIT_CANNOT_RUN
    return 0 if all(run["as_expected"] for run in report["variants"].values()) else EXIT_MISMATCH


if __name__ == "__main__":
    sys.exit(main())
