"""The suite's timings, read from a junit file pytest wrote: each tier's tests and seconds, the slowest ten.

    python tests/suite_report.py [RUN.xml | RUN.json] [--store]     (make suite-report [STORE=1])

`make test` and `make test-full` write out/suite/test.xml and out/suite/full.xml (pytest's own
--junitxml; conftest.py adds each test's tier as a property).  Without a RUN the newest of those is
read, else the stored runs in tests/suite_runs/.  --store keeps the run read there as data
(tests/suite_runs/<test|full>.json: each test's id, tier, seconds and outcome, the run's length, its
machine's cores; no path of the machine).  The budget of `make test` lives here, not in a timed
test: a `make test` run over it exits 1.
"""
import json
import os
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUNS = (HERE.parent / "out" / "suite", HERE / "suite_runs")
TEST_BUDGET_S = 360  # `make test` on a fresh 2-core clone, quiet or with a core kept busy


def newest_run() -> Path | None:
    for folder, kind in zip(RUNS, ("*.xml", "*.json")):
        found = sorted(folder.glob(kind), key=lambda p: p.stat().st_mtime)
        if found:
            return found[-1]
    return None


def read_run(path: Path) -> tuple[dict, list[tuple[float, str, str, str]]]:
    """The suite's attributes and, for each test, (seconds, tier, outcome, test id)."""
    if path.suffix == ".json":
        stored = json.loads(path.read_text())
        return stored["suite"], [tuple(test) for test in stored["tests"]]
    root = ET.parse(path).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    tests = []
    for case in suite.iter("testcase"):
        tier = next((p.get("value") for p in case.iter("property") if p.get("name") == "tier"), "?")
        outcome = next((kind for kind in ("failure", "error", "skipped") if case.find(kind) is not None), "passed")
        test = case.get("name", "")
        test = test.rsplit("@", 1)[0] if "@" in test.rpartition("]")[2] or "[" not in test else test  # xdist's group
        name = f"{case.get('classname', '').replace('.', '/')}.py::{test}"
        tests.append((float(case.get("time", 0)), tier, outcome, name))
    return suite.attrib, tests


def report(path: Path) -> int:
    suite, tests = read_run(path)
    wall_s = float(suite.get("time", 0))
    print(f"{path.name}: {len(tests)} tests, {wall_s:.0f} s from start to end "
          f"({suite.get('timestamp', '?')[:16]}, {suite.get('hostname', '?')})")
    by_tier = defaultdict(lambda: [0, 0.0, defaultdict(int)])
    for seconds, tier, outcome, _ in tests:
        by_tier[tier][0] += 1
        by_tier[tier][1] += seconds
        by_tier[tier][2][outcome] += 1
    total_s = sum(seconds for seconds, *_ in tests) or 1.0
    print(f"\n{'tier':<6} {'tests':>6} {'test s':>8} {'share':>6}  outcomes")
    for tier, (count, seconds, outcomes) in sorted(by_tier.items()):
        said = ", ".join(f"{n} {kind}" for kind, n in sorted(outcomes.items()))
        print(f"{tier:<6} {count:>6} {seconds:>8.0f} {seconds / total_s:>6.0%}  {said}")
    print("\n(test s: each test's own seconds added up; the runs of a scenario's variants count in its first test)")
    print("\nslowest ten:")
    for seconds, tier, _, name in sorted(tests, reverse=True)[:10]:
        print(f"  {seconds:7.1f} s  {tier:<4}  {name}")
    if set(by_tier) == {"test"}:
        verdict = "within" if wall_s <= TEST_BUDGET_S else "OVER"
        print(f"\nmake test: {wall_s:.0f} s, {verdict} its budget of {TEST_BUDGET_S} s")
        return 0 if wall_s <= TEST_BUDGET_S else 1
    return 0


def store(path: Path) -> Path:
    """The run as data, beside the stored ones: no output, no path, the tier's name as its file's."""
    suite, tests = read_run(path)
    tiers = {tier for _, tier, _, _ in tests}
    kept = HERE / "suite_runs" / f"{'test' if tiers == {'test'} else 'full'}.json"
    kept.parent.mkdir(exist_ok=True)
    attributes = {key: suite.get(key) for key in ("time", "timestamp", "tests")}
    attributes["cores"] = os.cpu_count()
    lines = ",\n".join(json.dumps(list(test)) for test in sorted(tests, key=lambda t: t[3]))
    kept.write_text(f'{{"suite": {json.dumps(attributes)},\n"tests": [\n{lines}\n]}}\n')
    return kept


def main(argv: list[str]) -> int:
    keep = "--store" in argv
    argv = [arg for arg in argv if arg != "--store"]
    path = Path(argv[0]) if argv else newest_run()
    if path is None or not path.is_file():
        print(f"error: no suite run to read{f' at {argv[0]}' if argv else ''}; `make test` writes one "
              "(out/suite/test.xml)", file=sys.stderr)
        return 2
    try:
        status = report(path)
        if keep:
            print(f"\nstored as {store(path).relative_to(HERE.parent)}")
        return status
    except (ET.ParseError, ValueError, KeyError) as error:
        print(f"error: {path} is not a junit file pytest wrote ({error})", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
