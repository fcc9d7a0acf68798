"""How far each exercise's fixed.py stays from the `observe` bounds the grader holds it to: fixed.py
graded ROUNDS times (as the suite grades it, the hook in every interpreter), each bounded figure
the hook saw printed with its spread, and for a figure that varies from run to run how many
standard deviations of its logarithm lie between the median and the bound (a log-normal fit:
3.1 is about once in a thousand runs).  Run it with one core kept busy, as the suite runs.

    python tests/workshop_attempts/margins.py [--rounds N] [NN ...]     # 10 rounds unless told
"""
import json
import math
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from scenarios.clinic.run.declarations import discover  # noqa: E402  (after sys.path names the repository)
from scenarios.clinic.workshop.worker_records import worker_figures  # noqa: E402

# observe key -> (the figure the hook reports, "min" or "max" bound)
FIGURES = {"worker_share": "min", "worker_ms_per_batch": "min", "worker_wall_ms_per_batch": "min",
           "worker_read_kb_per_batch": "min", "shm_peak_mb": "max", "busy_threads": "max", "pool_threads": "min",
           "worker_net_kb_per_batch": "min", "compiles": "max"}


def seen_figure(key: str, observed: dict):
    """The figure a bound is judged on: the run's own, or the one the grader reads from the workers' records."""
    per_worker = worker_figures(observed)
    return per_worker[key] if key in per_worker else observed.get(key)


def grade(number: str) -> dict:
    fixed = next(REPO.glob(f"scenarios/{number}_*/fixed.py"))
    done = subprocess.run([sys.executable, "-m", "scenarios", "check", number, str(fixed), "--json"], cwd=REPO,
                          capture_output=True, text=True)
    answer = json.loads(done.stdout)
    return {"state": answer["state"], "observed": (answer.get("result") or {}).get("observed") or {},
            "said": (answer.get("problems") or [""])[0]}


def sigmas(values: list[float], bound: float, side: str) -> str:
    if min(values) <= 0 or bound <= 0 or len(set(values)) < 3:
        return "-"
    logs = [math.log(v) for v in values]
    spread = statistics.stdev(logs)
    distance = statistics.median(logs) - math.log(bound)
    return f"{(distance if side == 'min' else -distance) / spread:.1f}" if spread else "-"


def main(args):
    rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 10
    chosen = [a for i, a in enumerate(args) if a != "--rounds" and (i == 0 or args[i - 1] != "--rounds")]
    for scenario in discover().values():
        observe = (scenario.exercise or {}).get("observe", {})
        keys = [k for k in observe if k in FIGURES]
        if not keys or chosen and scenario.number not in chosen:
            continue
        runs = [grade(scenario.number) for _ in range(rounds)]
        passed = sum(r["state"] == "passed" for r in runs)
        print(f"{scenario.number}: fixed.py passed {passed} of {rounds}", flush=True)
        for run in runs:
            if run["state"] != "passed":
                print(f"  {run['state']}: {run['said'][:300]}", flush=True)
        for key in keys:
            values = [v for v in (seen_figure(key, r["observed"]) for r in runs) if v is not None]
            side, bound = FIGURES[key], observe[key]
            tripped = sum(v < bound if side == "min" else v > bound for v in values)
            if values:
                print(f"  {key} ({side} {bound}): {min(values):g} / {statistics.median(values):g} / {max(values):g}"
                      f" (min / median / max of {len(values)}), tripped {tripped}, sigmas to the bound "
                      f"{sigmas(values, bound, side)}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
