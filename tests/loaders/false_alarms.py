"""How often the doctor trips on a healthy loader: every well-built public loader
(tests/test_doctor_public_loaders.py's WELL_BUILT) examined ROUNDS times with the probe, on a quiet
machine or with one core kept busy, and each finding counted by its rule.

    python tests/loaders/false_alarms.py [ROUNDS] [--busy]

Prints one line per rule that fired (risks are false alarms; a note beyond the first on a loader
counts too) and the totals: runs, runs with a risk, runs with more than one finding.  Several
minutes: each examination is a real probe of a few seconds.
"""
import collections
import json
import subprocess
import sys
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS.parent), str(TESTS)]

from test_doctor_public_loaders import PROBE_LIMIT_S, PUBLIC, WELL_BUILT  # noqa: E402  (after sys.path names the repository: run as a script)

from scenarios.clinic.doctor.engine import examine_file  # noqa: E402  (the same)

# The datasets loaders go last: importing datasets changes this process's multiprocessing settings.
ORDER = sorted(WELL_BUILT, key=lambda name: name.startswith("hf_"))


def one_round() -> None:
    """Every loader once, in this process, as the suite's chunks run them: one JSON line each."""
    for name in ORDER:
        findings = examine_file(f"{PUBLIC}/{name}.py:make_loader", limit_s=PROBE_LIMIT_S)
        print(json.dumps([name, [[f.level, f.scenario, f.check] for f in findings]]), flush=True)


def main(args) -> int:
    if "--round" in args:
        one_round()
        return 0
    rounds = int(next((a for a in args if a.isdigit()), "3"))
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if "--busy" in args else None
    fired, runs, with_risk, crowded = collections.Counter(), 0, 0, 0
    started = time.perf_counter()
    try:
        for _ in range(rounds):  # a process each: a thread one loader's library left would meet the next
            done = subprocess.run([sys.executable, __file__, "--round"], capture_output=True, text=True, timeout=900)
            for line in done.stdout.splitlines():
                name, findings = json.loads(line)
                runs += 1
                with_risk += any(level == "risk" for level, _, _ in findings)
                crowded += len(findings) > 1
                fired.update((level, scenario, check, name) for level, scenario, check in findings)
    finally:
        if spinner:
            spinner.kill()
            spinner.wait()
    for (level, scenario, check, name), count in sorted(fired.items()):
        print(f"{level:5} {scenario} {check:28} {count:3} of {rounds} runs of {name}")
    print(f"{runs} runs of {len(ORDER)} well-built loaders{' with one core kept busy' if spinner else ''} in "
          f"{time.perf_counter() - started:.0f} s: {with_risk} with a risk, {crowded} with more than one finding")
    return 1 if with_risk or runs < rounds * len(ORDER) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
