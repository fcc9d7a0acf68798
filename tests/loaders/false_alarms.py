"""How often the doctor trips on a healthy loader: every well-built public loader
(tests/test_doctor_public_loaders.py's WELL_BUILT) examined ROUNDS times with the probe, on a quiet
machine or with one core kept busy, and each finding counted by its rule.

    python tests/loaders/false_alarms.py [ROUNDS] [--busy] [--record FILE]

Prints one line per rule that fired (risks are false alarms; a note beyond the first on a loader
counts too) and the totals: runs, runs with a risk, runs with more than one finding.  Then, for the
rules that chance can move, how close the healthy runs came to their thresholds: the probe's longest
wait between events against its stall limit (01's hang), each worker's late memory growth against 03's
bounds, the workers' agreeing random draws against 12's "all of them", and the samples two workers
both delivered against 13's bound.  --record appends every run's record to FILE, so that runs from
several invocations (quiet and busy) can be summed with --summary FILE; the checks' HEALTHY figures
are rendered from scenarios/clinic/doctor/measured/healthy_loaders.jsonl, recorded this way.
Several minutes a round: each examination is a real probe of a few seconds.
"""
import collections
import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

import torch

TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS.parent), str(TESTS)]

from test_doctor_public_loaders import PROBE_LIMIT_S, PUBLIC, WELL_BUILT  # noqa: E402  (after sys.path names the repository: run as a script)

from scenarios.clinic.doctor import checks, events, healthy  # noqa: E402  (the same)
from scenarios.clinic.doctor.checks import s03_list_refcount_growth as s03  # noqa: E402  (the same)
from scenarios.clinic.doctor.checks import s12_identical_augmentations as s12  # noqa: E402  (the same)
from scenarios.clinic.doctor.checks import s13_iterable_dataset_duplicates as s13  # noqa: E402  (the same)
from scenarios.clinic.doctor.engine import examine_file  # noqa: E402  (the same)
from scenarios.clinic.measured import this_machine  # noqa: E402  (the same)

# The datasets loaders go last: importing datasets changes this process's multiprocessing settings.
ORDER = sorted(WELL_BUILT, key=lambda name: name.startswith("hf_"))


def margins(findings) -> dict:
    """Each chance-moved figure of this run as a share of the threshold that would make it a finding."""
    probe, setup, found = findings.probe, findings.setup, {}
    if probe is None or probe.outcome == "not-run":
        return found
    if probe.stall_limit_s:
        found[healthy.HANG] = probe.longest_gap_s / probe.stall_limit_s
    grown = s03._growth(setup, probe)
    if grown:
        late = max(grown["per_batch_mb"], 0.0) / s03._LATE_MB_PER_BATCH
        epoch = max(grown["projected_mb"], 0.0) / s03._COPY_RISK_MB
        found[healthy.GROWTH] = min(late, epoch)   # the rule needs both
    drawn = probe.first(events.DRAWS)
    pairs = list(zip(*drawn.get("by_worker", [])[:2])) if drawn and s12._verdict(drawn) else []
    if pairs:   # a sample random enough to tell
        found[healthy.DRAWS] = sum(a == b for a, b in pairs[:events.DRAW_PAIRS]) / events.DRAW_PAIRS
    iterate = probe.first(events.ITERATE)
    if setup.iterable and iterate and iterate.get("sample_hashes"):
        bound = s13._repeat_bound(iterate["sample_hashes"])
        found[healthy.REPEATS] = iterate.get("across_workers", 0) / bound
    return found


def one_round(busy: bool) -> None:
    """Every loader once, in this process, as the suite's chunks run them: one JSON record each."""
    machine = dataclasses.asdict(this_machine(torch.__version__))
    ran = sorted(check.SCENARIO for check in checks.CHECKS)   # a check added later is not judged by this run
    for name in ORDER:
        findings = examine_file(f"{PUBLIC}/{name}.py:make_loader", limit_s=PROBE_LIMIT_S)
        print(json.dumps({"loader": name, "busy": busy, "findings": [[f.level, f.scenario, f.check] for f in findings],
                          "margins": margins(findings), "checks": ran, "machine": machine}), flush=True)


def summary(lines: list[str], label: str) -> int:
    fired, runs, with_risk, crowded, seen = collections.Counter(), 0, 0, 0, set()
    recorded = [json.loads(line) for line in lines]
    for record in recorded:
        name, findings, shares = record["loader"], record["findings"], record["margins"]
        runs += 1
        with_risk += any(level == "risk" for level, _, _ in findings)
        crowded += len(findings) > 1
        fired.update((level, scenario, check, name) for level, scenario, check in findings)
        seen.update(shares)
    for (level, scenario, check, name), count in sorted(fired.items()):
        print(f"{level:5} {scenario} {check:28} {count:3} of {runs // len(ORDER)} runs of {name}")
    print(f"{runs} runs of {len(ORDER)} well-built loaders{label}: {with_risk} with a risk, "
          f"{crowded} with more than one finding")
    for figure in sorted(seen):
        print(f"{figure:40} {healthy.margin(figure, 'threshold', recorded)}")
    return with_risk


def main(args) -> int:
    if "--round" in args:
        one_round("--busy" in args)
        return 0
    if "--summary" in args:
        return 1 if summary(Path(args[args.index("--summary") + 1]).read_text().splitlines(), " (recorded)") else 0
    rounds = int(next((a for a in args if a.isdigit()), "3"))
    record = Path(args[args.index("--record") + 1]) if "--record" in args else None
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if "--busy" in args else None
    lines, started = [], time.perf_counter()
    try:
        for _ in range(rounds):  # a process each: a thread one loader's library left would meet the next
            done = subprocess.run([sys.executable, __file__, "--round", *(["--busy"] if spinner else [])],
                                  capture_output=True, text=True, timeout=900)
            lines += done.stdout.splitlines()
            if record:
                with record.open("a") as out:
                    out.writelines(line + "\n" for line in done.stdout.splitlines())
    finally:
        if spinner:
            spinner.kill()
            spinner.wait()
    label = f"{' with one core kept busy' if spinner else ''} in {time.perf_counter() - started:.0f} s"
    with_risk = summary(lines, label)
    return 1 if with_risk or len(lines) < rounds * len(ORDER) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
