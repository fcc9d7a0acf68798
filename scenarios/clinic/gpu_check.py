"""`gpu-check`: what a person with 15 minutes on a card runs.  Every variant of the scenarios that
need a CUDA GPU (their scenario.toml's `needs`), then their tests, the doctor's CUDA cases among
them, within one budget (5 minutes); one archive of it all is left in out/gpu-check/, which
`make figures TAKE_IN=ARCHIVE` (`python -m scenarios figures --take-in ARCHIVE`) stores as each
scenario's `gpu` run.

    make gpu-check                 # or: python -m scenarios.clinic.gpu_check [--budget-s 300]

The archive holds machine.json and run.json (what figures takes in), pytest.txt (the tests' output,
every failure's kept), results/ (each variant's full result, its whole output included: a failed
test's run can be read again) and card.txt (what the card still held at the end).  Exit status: 0
every variant as declared and every test passed, 1 not, 3 no usable CUDA device here.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from scenarios.clinic import REPO_ROOT
from scenarios.clinic.run.runner import OBSERVE_FIXED_ENV, RESULTS_ENV
from scenarios.host import EXIT_CANNOT_RUN, EXIT_NOT_AS_EXPECTED, EXIT_OK, cuda_problem

BUDGET_S = 300
# Kept for the tests, which read the variants' runs and run the doctor's CUDA cases (in 4 pytest
# workers where pytest-xdist is installed).  A cold H200 ran every variant of 25-28 in about 200 s.
TESTS_SHARE_S = 60
STOP_GRACE_S = 20        # after SIGTERM the runner ends and reaps the variant in progress


def gpu_scenarios() -> dict:
    from scenarios.clinic.run.declarations import discover
    return {number: s for number, s in discover().items() if "cuda" in s.needs}


def bounded(command: list[str], env: dict, seconds: float, out: Path, err: Path | None = None) -> int | None:
    """Run a command in a process group of its own, its output into `out` (its errors into `err`, or
    `out`); None where it ran past `seconds` and was stopped (SIGTERM, which the runner turns into a
    clean end, then SIGKILL)."""
    with out.open("w") as sink, (err or Path(os.devnull)).open("w") as errors:
        child = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stdout=sink,
                                 stderr=errors if err else subprocess.STDOUT, start_new_session=True)
        try:
            return child.wait(timeout=max(seconds, 1))
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGTERM)
            try:
                child.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
            return None


def _runs(numbers: list[str], env: dict, seconds: float, folder: Path) -> tuple[int | None, list[dict]]:
    """Every variant, as `run … --json` prints them; the report list is empty where it was stopped."""
    status = bounded([sys.executable, "-m", "scenarios", "run", *numbers, "--variant", "all", "--json"],
                     env, seconds, folder / "run.json", folder / "run-stderr.txt")
    try:
        reports = json.loads((folder / "run.json").read_text())
    except ValueError:  # stopped at the budget before it printed: results/ keeps each variant that ended
        reports = []
    reports = reports if isinstance(reports, list) else [reports]
    (folder / "run.json").write_text(json.dumps(reports, indent=1))
    return status, reports


def _card(folder: Path) -> str:
    """What the card still holds: nothing, once every run's processes are gone."""
    try:
        done = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=60)
        held = done.stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as err:
        held = f"unknown: nvidia-smi could not be asked ({err})"
    (folder / "card.txt").write_text(held + "\n")
    return held


def _archive(folder: Path) -> Path:
    out = REPO_ROOT / "out" / "gpu-check"
    out.mkdir(parents=True, exist_ok=True)
    archive = out / f"gpu-check-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname="gpu-check")
    return archive


def check(budget_s: float) -> int:
    from scenarios.clinic import measured
    from scenarios.clinic.run.report import torch_version

    started = time.monotonic()
    scenarios = gpu_scenarios()
    folder = Path(tempfile.mkdtemp(prefix="gpu-check-"))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), RESULTS_ENV: str(folder / "results"),
           OBSERVE_FIXED_ENV: "1"}   # as the test suite runs them: its tests then read these runs
    (folder / "results").mkdir()
    print(f"gpu-check: every variant of {', '.join(scenarios)}, then their tests; {budget_s:.0f} s in all", flush=True)
    status, reports = _runs(list(scenarios), env, budget_s - TESTS_SHARE_S, folder)
    tests = [f"tests/test_scenario_{n}.py" for n in scenarios if (REPO_ROOT / f"tests/test_scenario_{n}.py").is_file()]
    left = budget_s - (time.monotonic() - started)
    workers = ["-n", "4"] if importlib.util.find_spec("xdist") else []
    tested = bounded([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:randomly", "--full", *workers, *tests],
                     env, left, folder / "pytest.txt")
    machine = measured.this_machine(torch_version())
    (folder / "machine.json").write_text(json.dumps(dataclasses.asdict(machine), indent=1))
    held = _card(folder)
    archive = _archive(folder)
    shutil.rmtree(folder, ignore_errors=True)
    return _say(status, tested, held, archive, time.monotonic() - started)


def _say(status: int | None, tested: int | None, held: str, archive: Path, seconds: float) -> int:
    runs = "stopped at the budget" if status is None else ("as declared" if status == EXIT_OK else f"status {status}")
    tests = "stopped at the budget" if tested is None else ("passed" if tested == 0 else f"pytest status {tested}")
    print(f"gpu-check, {seconds:.0f} s: the variants {runs}; their tests {tests}; "
          f"the card {'holds ' + held if held else 'holds nothing of ours'}", flush=True)
    print(f"archive: {archive.relative_to(REPO_ROOT)}\n"
          f"store its runs as the gpu figures: make figures TAKE_IN={archive.relative_to(REPO_ROOT)}", flush=True)
    return EXIT_OK if status == EXIT_OK and tested == 0 and not held else EXIT_NOT_AS_EXPECTED


def arguments(name: str, parser) -> None:
    parser.add_argument("--budget-s", type=float, default=BUDGET_S,
                        help=f"the whole check's limit in seconds (default {BUDGET_S})")


def run(args) -> int:
    why = cuda_problem()
    if why is not None:
        print(f"gpu-check cannot run here: {why}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    return check(args.budget_s)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scenarios.clinic.gpu_check", description=__doc__.split("\n\n")[0])
    arguments("gpu-check", parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
