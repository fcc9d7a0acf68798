"""Bench: the goals, and the tables that the terminal, the README's Benchmarks block and
notebooks/bench.ipynb show.  Everything here reads a result; nothing measures."""
from __future__ import annotations

from pathlib import Path

from scenarios.clinic import REPO_ROOT
from scenarios.clinic.bench.in_flight import PLANNER_LOOSEST, too_loose, under_predicted
from scenarios.clinic.blocks import markers, replace_block

README_BLOCK = "bench"
README_BEGIN, README_END = markers(README_BLOCK)


def goals(result: dict) -> dict:
    """goal -> met?  The figures each one compares are in `result`."""
    stores = result["stores"]
    ours, listed = stores["ours"], stores["list"]
    generic = [s for name, s in stores.items() if s["generic"] and not s["ours"] and name != "list"]
    cells = result["in_flight"]
    return {
        "ours_growth_at_most_a_tenth_of_list":
            ours["worker_uss_growth_mb"] <= listed["worker_uss_growth_mb"] / 10,
        "ours_growth_no_worse_than_best_generic_peer":
            ours["worker_uss_growth_mb"] <= min(s["worker_uss_growth_mb"] for s in generic) + 1.0,
        "ours_indexing_no_slower_than_best_generic_peer":
            ours["ns_per_item"] <= 1.05 * min(s["ns_per_item"] for s in generic),
        "ours_works_under_spawn": ours["spawn_ok"],
        "planner_never_under_predicts": not any(map(under_predicted, cells)),
        "planner_at_most_a_quarter_over_where_batches_in_flight_dominate": not any(map(too_loose, cells)),
    }


def store_table(result: dict) -> str:
    rows = ["| store | ours | generic | worker USS growth (MB) | PSS, all processes (MB) | ns per record | "
            "build (s) | spawn ok |", "|---|---|---|---|---|---|---|---|"]
    for name, s in result["stores"].items():
        rows.append(f"| `{name}` | {'yes' if s['ours'] else ''} | {'yes' if s['generic'] else 'no'} | "
                    f"{s['worker_uss_growth_mb']:.1f} | {s['pss_total_mb']:.0f} | {s['ns_per_item']:,} | "
                    f"{s['build_s']:.2f} | {'yes' if s['spawn_ok'] else 'NO'} |")
    return "\n".join(rows)


def in_flight_table(result: dict) -> str:
    rows = ["| workers | prefetch_factor | batch | batch (MiB) | a worker's own (MiB, measured) | predicted (MiB) | "
            "measured (MiB) | in flight / predicted | predicted / measured |", "|---|---|---|---|---|---|---|---|---|"]
    for c in result["in_flight"]:
        flag = (" (UNDER)" if under_predicted(c) else f" (over {PLANNER_LOOSEST}x)" if too_loose(c) else "")
        rows.append(f"| {c['workers']} | {c['prefetch_factor']} | {c['batch_size']} | {c['batch_mb']:.2f} | "
                    f"{c['worker_overhead_mb']:.0f} | {c['predicted_mb']:.1f} | {c['measured_mb']:.1f} | "
                    f"{c['in_flight_share']:.0%} | {c['ratio']:.2f}{flag} |")
    return "\n".join(rows)


def remote_table(result: dict) -> str:
    rows = ["| loader | steps/s | bound (steps/s) | of the bound |", "|---|---|---|---|"]
    for r in result["remote"]:
        rows.append(f"| {r['config']} | {r['throughput_per_s']:.1f} | {r['bound_per_s']:.1f} | {r['ratio']:.0%} |")
    return "\n".join(rows)


def happy_table(result: dict) -> str:
    rows = ["| fix | plain (ns/sample) | with the fix (ns/sample) | price (ns/sample) |", "|---|---|---|---|"]
    for name, h in result["happy_path"].items():
        rows.append(f"| `{name}` | {h['plain_ns']:,} | {h['fixed_ns']:,} | {h['extra_ns']:+,} |")
    return "\n".join(rows)


def goals_lines(result: dict) -> str:
    return "\n".join(f"- {'met' if met else 'NOT met'}: {name.replace('_', ' ')}"
                     for name, met in result["goals"].items())


def readme_block(result: dict) -> str:
    return "\n".join([
        (f"Written by `make figures` from the stored run (`make bench`, {result['wall_s']:.0f} s): "
         f"torch {result['torch']}, Python {result['python']}, {result['machine']}, "
         f"load average {result['load_average'][0]:.1f} at the start."), "",
        f"Read-only records for forked workers ({result['records']:,} records, 2 workers, one epoch in random order):",
        "", store_table(result), "",
        "Memory in flight, `fixes/memory_in_flight.py`'s prediction (a worker's own memory measured by "
        "`measure_worker_overhead_mb`) against the measured peak:", "",
        in_flight_table(result), "",
        "Remote storage (the lab kit's loopback store, 20 ms a request):", "",
        remote_table(result), "",
        "The price of each fix where nothing goes wrong:", "",
        happy_table(result), "",
        "Goals:", "", goals_lines(result)])


def write_readme(result: dict, readme: Path = REPO_ROOT / "README.md") -> None:
    replace_block(readme, README_BLOCK, readme_block(result))
