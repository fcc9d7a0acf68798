"""`bench`: scenarios/clinic/bench/suite.py measures, this file is its command line."""
import sys
from pathlib import Path


def arguments(name: str, parser) -> None:
    parser.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    parser.add_argument("--quick", action="store_true", help="reduced sizes, seconds")
    parser.add_argument("--output", type=Path, metavar="FILE",
                        help="where to write this run's results (default: out/bench/<UTC time>.json, git-ignored)")
    parser.add_argument("--figures", action="store_true",
                        help="measure nothing: rewrite the README's Benchmarks block from the stored run "
                             "(scenarios/clinic/bench/results.json)")


def run(args) -> int:
    from scenarios.clinic.bench import suite
    from scenarios.host import EXIT_BAD_INPUT

    if args.figures:
        if args.quick or args.output or args.json:
            print("error: --figures measures nothing; it takes no --quick, --output or --json", file=sys.stderr)
            return EXIT_BAD_INPUT
        return suite.figures()
    return suite.main(quick=args.quick, as_json=args.json, output=args.output)
