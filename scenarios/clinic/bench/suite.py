"""Benchmarks side by side: our fixes against what a user would pick instead (issue 14).

    python -m scenarios bench [--json] [--quick] [--output FILE]    # or: make bench
    python -m scenarios bench --figures    # the README's Benchmarks block from the stored run

One run measures four things, each in a module of its own, and judges ours against the goals
in report.py:
1. stores.py: read-only record storage for forked workers (scenario 03), 200,000 records
   (`--quick`: 15,000); spawn.py: does a spawn worker read each store right.
2. in_flight.py: fixes/memory_in_flight.py's predicted peak against the measured one.
3. remote.py: throughput from a slow store per loader configuration against its bound.
4. happy_path.py: the price of a fix where nothing goes wrong.

Goals for ours: worker growth at most 1/10 of the list's and no more than the best generic
peer's (+1 MB, the resolution of a USS reading); indexing no slower than the best generic
peer's (5 % for timing noise); the planner never under the measured peak, and within 1.25x of
it where the batches in flight are at least half its prediction.  Exit status: 0 every goal
met, 1 a goal not met, 2 bad input (pyarrow missing), 3 cannot run here (needs Linux and fork).

A run leaves the checkout as it was: it writes its results to a file of its own, by default
out/bench/<UTC time>[-quick].json (out/ is git-ignored).  The stored run that the README and
notebooks/bench.ipynb quote is RESULTS_PATH; a maintainer replaces it with a full run's file
on purpose (`cp out/bench/<run>.json scenarios/clinic/bench/results.json`), and `make figures`
rewrites the README's block from it.
"""
from __future__ import annotations

import importlib.util
import json
import multiprocessing
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import torch

from scenarios.clinic import REPO_ROOT
from scenarios.clinic.bench import report
from scenarios.host import EXIT_BAD_INPUT, EXIT_CANNOT_RUN, EXIT_NOT_AS_EXPECTED, EXIT_OK

RESULTS_PATH = Path(__file__).with_name("results.json")
RUNS_DIR = REPO_ROOT / "out" / "bench"
SIZES = {"full": {"records": 200_000, "grid": ([1, 2], [1, 4], [8, 32]), "grid_steps": 24,
                  "remote": (0, 2, 4), "remote_steps": 30, "happy_samples": 5_000},
         "quick": {"records": 15_000, "grid": ([2], [1, 4], [32]), "grid_steps": 10,
                   "remote": (0,), "remote_steps": 10, "happy_samples": 2_000}}


def _machine() -> dict:
    return {"torch": torch.__version__, "python": platform.python_version(),
            "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores",
            "load_average": [round(x, 2) for x in os.getloadavg()]}


def run(quick: bool = False, show=sys.stderr) -> dict:
    """Measure the four parts, one after another, and judge them."""
    from scenarios.clinic.bench import happy_path, in_flight, remote, stores

    size = SIZES["quick" if quick else "full"]
    say = (lambda text: print(text, file=show, flush=True)) if show else (lambda text: None)
    result = {"quick": quick, "records": size["records"], **_machine()}
    parts = [
        ("stores", f"1. stores: {size['records']:,} records, 2 forked workers, one epoch each …",
         lambda: stores.compare_stores(size["records"], not quick, say), report.store_table),
        ("in_flight", "2. memory in flight: the planner's prediction against the measured peak …",
         lambda: in_flight.measure_in_flight(size["grid"], size["grid_steps"]), report.in_flight_table),
        ("remote", "3. remote storage: throughput against min(workers / fetch, 1 / compute) …",
         lambda: remote.measure_remote(size["remote"], size["remote_steps"]), report.remote_table),
        ("happy_path", "4. the price of each fix on the happy path …",
         lambda: happy_path.measure_happy_path(size["happy_samples"]), report.happy_table),
    ]
    started, phases = time.perf_counter(), {}
    for name, heading, measure, table in parts:
        say(heading)
        mark = time.perf_counter()
        result[name] = measure()
        phases[name] = round(time.perf_counter() - mark, 1)
        say(table(result))
    result["goals"] = report.goals(result)
    result["phase_s"] = phases
    result["wall_s"] = round(time.perf_counter() - started, 1)
    return result


def run_file(quick: bool) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return RUNS_DIR / f"{stamp}{'-quick' if quick else ''}.json"


def _shown(path: Path) -> str:
    """A path as the repository's readers know it: relative to the checkout where it is inside."""
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def cannot_run() -> tuple[int, str] | None:
    if sys.platform != "linux" or "fork" not in multiprocessing.get_all_start_methods():
        return EXIT_CANNOT_RUN, ("cannot run here: the benchmark measures forked DataLoader workers and reads "
                                 "/proc (Linux only); run it on a Linux machine or in a Linux container")
    if importlib.util.find_spec("pyarrow") is None:
        return EXIT_BAD_INPUT, ("error: the benchmark compares against a pyarrow table: run `make setup` "
                                "(or `pip install -r requirements.txt`)")
    return None


def main(quick: bool = False, as_json: bool = False, output: Path | None = None) -> int:
    refused = cannot_run()
    if refused:
        print(refused[1], file=sys.stderr)
        return refused[0]
    try:
        result = run(quick=quick, show=sys.stderr)
    except (RuntimeError, subprocess.TimeoutExpired) as err:  # a part that could not measure says why
        print(f"error: the benchmark could not finish: {err}", file=sys.stderr)
        return EXIT_NOT_AS_EXPECTED
    output = output or run_file(quick)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {_shown(output)}", file=sys.stderr)
    print(f"goals ({result['wall_s']:.0f} s):\n{report.goals_lines(result)}", file=sys.stderr)
    if as_json:
        print(json.dumps(result, indent=1))
    return EXIT_OK if all(result["goals"].values()) else EXIT_NOT_AS_EXPECTED


def figures(results: Path = RESULTS_PATH) -> int:
    """The README's Benchmarks block from a stored run; measures nothing."""
    try:
        result = json.loads(results.read_text())
    except (OSError, ValueError) as err:
        print(f"error: cannot read the stored bench results {_shown(results)}: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if result.get("quick"):
        print(f"error: {_shown(results)} is a --quick run; the README quotes full runs only", file=sys.stderr)
        return EXIT_BAD_INPUT
    report.write_readme(result)
    print(f"rewrote the Benchmarks block of README.md from {_shown(results)}", file=sys.stderr)
    return EXIT_OK
