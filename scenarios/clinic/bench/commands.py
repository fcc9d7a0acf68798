"""`bench`: scenarios/clinic/bench/suite.py measures, this file is its command line."""


def arguments(name: str, parser) -> None:
    parser.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    parser.add_argument("--quick", action="store_true", help="reduced sizes, seconds; stores no results")


def run(args) -> int:
    from scenarios.clinic.bench.suite import main
    return main(quick=args.quick, as_json=args.json)
