"""`doctor`: this machine (no argument), the user's loader (FILE.py:FUNCTION), or the list of checks; and
`explain`: a pasted log or traceback (explain.py reads it)."""
from __future__ import annotations

import argparse
import json
import sys

from scenarios.host import EXIT_BAD_INPUT, EXIT_CANNOT_RUN, EXIT_NOT_AS_EXPECTED, EXIT_OK


def arguments(name: str, parser) -> None:
    if name == "explain":
        parser.add_argument("file", nargs="?", default="-", help="a log or traceback; '-' or nothing: standard input")
        parser.add_argument("--json", action="store_true", help="print the findings as JSON on stdout")
        return
    parser.add_argument("loader", nargs="?", metavar="FILE.py:FUNCTION",
                        help="a function that takes no arguments and returns your DataLoader; or, after --, "
                             "your own command: doctor -- python train.py (watched for --seconds, then stopped)")
    parser.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="print the findings as JSON on stdout")
    parser.add_argument("--no-probe", action="store_true",
                        help="static checks only: do not iterate the loader in a child process")
    parser.add_argument("--check", action="append", metavar="NAME",
                        help="run only this check (a scenario number or a name from --list-checks); repeatable")
    parser.add_argument("--all", action="store_true", dest="show_all",
                        help="also the general notes: true of every loader of this configuration (timeout=0, "
                             "pools sized for the machine, a budget far out of reach)")
    parser.add_argument("--list-checks", action="store_true", help="list every check with its scenario")
    parser.add_argument("--pid", type=int, help="examine a training job running now (or one of its workers)")
    parser.add_argument("--seconds", type=float,
                        help="with --pid: how long to watch it (default 6); with -- COMMAND: how long to let your "
                             "run go before it is stopped (default 60)")
    parser.add_argument("--orphans", action="store_true",
                        help="DataLoader workers and fork servers whose training process is gone")
    parser.add_argument("--kill", action="store_true", help="with --orphans: end them after listing them")


def run(args) -> int:
    if args.command == "explain":
        return explain_main(args.file, as_json=args.json)
    if args.list_checks:
        return list_checks()
    if args.orphans:
        from scenarios.clinic.doctor.orphans import main
        return main(kill=args.kill, as_json=args.json)
    if args.kill:
        print("error: --kill goes with --orphans", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.pid is not None:
        seconds = 6.0 if args.seconds is None else args.seconds
        return running_main(args.pid, seconds, as_json=args.json, only=args.check)
    if args.rest or args.loader and ":" not in args.loader:  # `doctor -- python train.py`, `doctor -- ./run.sh`
        return command_main([args.loader, *args.rest], args.seconds, as_json=args.json, only=args.check)
    if args.loader:
        return examine_main(args.loader, as_json=args.json, with_probe=not args.no_probe, only=args.check,
                            show_all=args.show_all)
    if args.json or args.no_probe or args.check:
        print("error: --json, --no-probe and --check apply to a loader: doctor FILE.py:FUNCTION", file=sys.stderr)
        return EXIT_BAD_INPUT
    from scenarios.clinic.doctor.machine import main
    return main()


def list_checks() -> int:
    from scenarios.clinic.doctor.checks import CHECKS, name_of
    from scenarios.clinic.run.declarations import discover

    titles = {number: scenario.title for number, scenario in discover().items()}
    for check in sorted(CHECKS, key=lambda c: c.SCENARIO):
        parts = ([p for p in ("static", "measured") if hasattr(check, p)]
                 + (["errors"] if getattr(check, "ERRORS", ()) else []))
        print(f"  {name_of(check):<38} {'+'.join(parts):<23} {', '.join(check.FIXES)}")
        print(f"  {'':<38} {titles.get(check.SCENARIO, '(scenario being written)')[:90]}")
    return EXIT_OK


def examine_main(target: str, as_json: bool = False, with_probe: bool = True, limit_s: float | None = None,
                 only: list[str] | None = None, show_all: bool = False) -> int:
    """`python -m scenarios doctor FILE.py:FUNCTION [--json] [--no-probe] [--check NAME] [--all]`: the exit status."""
    from scenarios.clinic.doctor.engine import examine_file
    from scenarios.clinic.doctor.findings import BadInput, format_report, readable
    from scenarios.clinic.doctor.probe import PROBE_LIMIT_S

    report_to = sys.stdout
    if as_json:  # whatever the user's code prints (now, or from its threads later) goes to stderr
        sys.stdout = sys.stderr
    try:  # (python -m scenarios has checked that torch, numpy and psutil are installed)
        findings = examine_file(target, with_probe=with_probe, limit_s=limit_s or PROBE_LIMIT_S, only=only,
                                show_all=show_all)
    except BadInput as err:
        print(f"error: {readable(str(err))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:  # called as a function (tests, a notebook): leave this process's stdout as it was
        if as_json and sys.stdout is sys.stderr:
            sys.stdout = report_to
    if as_json:
        print(json.dumps(findings.as_json(), indent=1), file=report_to)
        report_to.flush()
    else:
        print(format_report(findings))
    sys.stdout.flush()
    if findings.risks:
        return EXIT_NOT_AS_EXPECTED
    if findings.probe is not None and findings.probe.outcome == "not-run" and not sys.platform.startswith("linux"):
        return EXIT_CANNOT_RUN
    return EXIT_OK


def running_main(pid: int, seconds: float, as_json: bool = False, only=None) -> int:
    """`doctor --pid PID`: 0 no risk, 1 risks, 2 no such process, 3 nothing readable."""
    import psutil

    from scenarios.clinic.doctor.findings import BadInput, format_report
    from scenarios.clinic.doctor.engine import examine_running

    if not 0.5 <= seconds <= 60:
        print("error: --seconds takes 0.5 to 60", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        findings = examine_running(pid, seconds, only=only)
    except psutil.NoSuchProcess:
        print(f"error: no process {pid}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except psutil.AccessDenied:
        print(f"cannot run here: /proc of process {pid} cannot be read by this user; run as its user or with sudo",
              file=sys.stderr)
        return EXIT_CANNOT_RUN
    except BadInput as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if as_json:
        print(json.dumps(findings.as_json(), indent=1))
    else:
        print(format_report(findings))
    return EXIT_NOT_AS_EXPECTED if findings.risks else EXIT_OK


def command_main(command: list[str], seconds: float | None, as_json: bool = False, only=None) -> int:
    """`doctor -- COMMAND`: 0 no risk, 1 risks, 2 no such command or bad --seconds."""
    from scenarios.clinic.doctor.engine import examine_command
    from scenarios.clinic.doctor.findings import format_report
    from scenarios.clinic.doctor.watched_run import WINDOW_S, problem_with

    seconds = WINDOW_S if seconds is None else seconds
    problem = problem_with(command) or ("" if 1 <= seconds <= 3600 else "--seconds takes 1 to 3600 with a command")
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    findings = examine_command(command, seconds, only=only)
    if as_json:
        print(json.dumps(findings.as_json(run=findings.probe_status), indent=1))
    else:
        print(format_report(findings))
    return EXIT_NOT_AS_EXPECTED if findings.risks else EXIT_OK


def explain_main(file: str, as_json: bool) -> int:
    from scenarios.clinic.doctor.explain import explain_text
    from scenarios.clinic.doctor.findings import Findings, readable

    try:
        text = sys.stdin.read() if file == "-" else open(file, encoding="utf-8", errors="replace").read()
    except OSError as err:
        print(f"error: cannot read {file}: {err.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not text.strip():
        print("error: the input is empty: paste the log or the traceback, or give its file", file=sys.stderr)
        return EXIT_BAD_INPUT
    findings = explain_text(text)
    if as_json:
        print(json.dumps(Findings(findings).as_json(), indent=1))
    elif not findings:
        print("no DataLoader failure found in this text (an error of the model's own, or a healthy run)")
    for finding in ([] if as_json else findings):
        print(readable(f"\n{finding.level}  {finding.scenario}  {finding.check}\n      {finding.evidence}\n"
                       f"      fix: {finding.fix}\n      see: {finding.readme}"))
    return EXIT_NOT_AS_EXPECTED if findings else EXIT_OK
