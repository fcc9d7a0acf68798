"""The command line of DataLoader Clinic: one table of commands (COMMANDS), each module imported
only when its command runs.  `python -m scenarios -h` lists them, from that table alone; README.md
and the Makefile's help show them to people (tests/test_layout.py holds the three together).

Exit status, the same for every command (scenarios/host.py): 0 as it should be, 1 not as it
should be (a variant did not show what its declaration says; for the doctor on a loader: risks
found; for check: the attempt is not fixed yet), 2 bad input, 3 cannot run here.  Stopped by
Ctrl-C, SIGTERM or SIGHUP, it first ends and reaps the run in progress, then exits as the shell
expects of a stopped command (130, 143, 129).
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import signal
import sys

from scenarios.host import EXIT_BAD_INPUT


@dataclasses.dataclass(frozen=True)
class Command:
    module: str      # defines arguments(parser) and run(args) -> exit status
    summary: str


# As pip's commands_dict: help, dispatch and the lazy import all come from here.
COMMANDS = {
    "list": Command("scenarios.clinic.run.commands", "list the scenarios"),
    "run": Command("scenarios.clinic.run.commands", "run a scenario's variants and judge them"),
    "figures": Command("scenarios.clinic.figures", "run every variant, store the run as data (measured/cpu.json, "
                       "gpu.json) and rewrite what is rendered from it"),
    "tables": Command("scenarios.clinic.tables", "rewrite the READMEs' Measured blocks and the generated tables from "
                      "the declarations, fixes/ and the stored runs (measured/*.json); runs nothing"),
    "doctor": Command("scenarios.clinic.doctor.commands", "what this machine can reproduce; with FILE.py:FUNCTION, "
                      "examine the DataLoader that function returns"),
    "explain": Command("scenarios.clinic.doctor.commands", "a log or traceback (FILE or standard input): each "
                       "DataLoader failure in it, its scenario and its fix"),
    "bench": Command("scenarios.clinic.bench.commands", "benchmark our fixes against what users pick instead"),
    "practice": Command("scenarios.clinic.workshop.commands", "start an exercise: copy broken.py to workshop/"),
    "check": Command("scenarios.clinic.workshop.commands", "grade an attempt against the scenario's fixed declaration"),
    "hint": Command("scenarios.clinic.workshop.commands", "the next of the exercise's three hints"),
    "solution": Command("scenarios.clinic.workshop.commands", "show our fix (diff -u broken.py fixed.py)"),
    "workshop-status": Command("scenarios.clinic.workshop.commands", "every exercise's state, from workshop/"),
    "gpu-check": Command("scenarios.clinic.gpu_check", "on a CUDA GPU, within 5 minutes: every variant of the GPU "
                         "scenarios and their tests, into one archive that figures --take-in stores"),
    "new": Command("scenarios.clinic.skeleton", "write a new scenario's skeleton: NN slug (every file it adds, each "
                   "NOT YET WRITTEN until written)"),
}
NEEDED_PACKAGES = ("psutil", "torch", "numpy")


def parser(chosen: str | None = None) -> argparse.ArgumentParser:
    """Every command's name and summary; the arguments of the chosen one alone, so that a
    command imports its own module and no other (`list` loads no check)."""
    top = argparse.ArgumentParser(prog="python -m scenarios", description="DataLoader Clinic")
    commands = top.add_subparsers(dest="command", required=True)
    for name, command in COMMANDS.items():
        sub = commands.add_parser(name, help=command.summary, description=command.summary)
        if name == chosen:
            importlib.import_module(command.module).arguments(name, sub)
    return top


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser(argv[0] if argv else None).parse_args(argv)
    missing = [m for m in NEEDED_PACKAGES if importlib.util.find_spec(m) is None]
    if missing:
        print(f"error: missing Python package(s): {', '.join(missing)}. "
              "Run `make setup` (or `pip install -r requirements.txt`).", file=sys.stderr)
        return EXIT_BAD_INPUT
    return importlib.import_module(COMMANDS[args.command].module).run(args)


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


def run_command_line() -> int:
    _end_runs_on_termination()
    try:
        return main()
    except KeyboardInterrupt:  # the run in progress has been ended and reaped on the way here
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `… | head`: the reader has what it wanted
        sys.stdout = None
        return 0
