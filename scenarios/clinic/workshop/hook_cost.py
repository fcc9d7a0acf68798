"""What the grading hook costs: each exercise's fixed.py run by the runner as an attempt (the hook in
every interpreter, scenarios/clinic/run/observe.py) and as the scenario's own variant (no hook).

    python -m scenarios.clinic.workshop.hook_cost [NN …] [--runs N] [--write]

Prints one Markdown row per exercise: wall seconds and CPU seconds (every process of the run, as
the runner counts them) without and with the hook, the lowest of N runs each, taken in turn so that
other work on the machine weighs on both alike.  With --write (every exercise) it also rewrites
the table in scenarios/WORKSHOP.md, its only writer.
"""
from __future__ import annotations

import argparse

from scenarios.clinic import SCENARIOS_DIR
from scenarios.clinic.run.declarations import discover, missing_needs


def measure(numbers: list[str], runs: int) -> list[str]:
    from scenarios.clinic.run.runner import run_variant

    rows = ["| # | without the hook: wall / CPU s | with it: wall / CPU s | DataLoader workers seen | batches seen |",
            "|---|---|---|---|---|"]
    print("\n".join(rows))
    for number, scenario in discover().items():
        if numbers and number not in numbers:
            continue
        if missing_needs(scenario):  # a row still, so that the table keeps one per exercise
            rows.append(f"| {number} | not run here | not run here | | |")
            print(rows[-1], flush=True)
            continue
        best: dict[bool, list] = {False: [], True: []}
        seen = {}
        for _ in range(runs):
            for hooked in (False, True):
                result = run_variant(scenario, "fixed", None,
                                     script=scenario.script("fixed").resolve() if hooked else None)
                best[hooked].append((result["seconds"], result["metrics"]["cpu_s"]))
                seen = result.get("observed") or seen
        off, on = min(best[False]), min(best[True])
        rows.append(f"| {number} | {off[0]:.1f} / {off[1]:.1f} | {on[0]:.1f} / {on[1]:.1f} | "
                    f"{seen.get('real_workers', '?')} | {seen.get('batches', '?')} |")
        print(rows[-1], flush=True)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("numbers", nargs="*")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--write", action="store_true", help="rewrite WORKSHOP.md's table (every exercise only)")
    args = parser.parse_args()
    if args.write and args.numbers:
        parser.error("--write rewrites the whole table: give no exercise numbers")
    rows = measure([f"{int(n):02d}" for n in args.numbers], args.runs)
    if args.write:
        from scenarios.clinic.blocks import replace_block
        replace_block(SCENARIOS_DIR / "WORKSHOP.md", "hook-cost", "\n".join(rows))
