"""How often the doctor trips on a healthy loader: every well-built public loader
(tests/test_doctor_public_loaders.py's WELL_BUILT) examined ROUNDS times with the probe, on a quiet
machine or with one core kept busy, and each finding counted by its rule.

    python tests/loaders/false_alarms.py [ROUNDS] [--busy]

Prints one line per rule that fired (risks are false alarms; a note beyond the first on a loader
counts too) and the totals: runs, runs with a risk, runs with more than one finding.  Several
minutes: each examination is a real probe of a few seconds.
"""
import collections
import subprocess
import sys
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS.parent), str(TESTS)]

from test_doctor_public_loaders import PROBE_LIMIT_S, PUBLIC, WELL_BUILT  # noqa: E402

from scenarios.clinic.doctor.engine import examine_file  # noqa: E402

# The datasets loaders go last: importing datasets changes this process's multiprocessing settings.
ORDER = sorted(WELL_BUILT, key=lambda name: name.startswith("hf_"))


def main(args) -> int:
    rounds = int(next((a for a in args if a.isdigit()), "3"))
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if "--busy" in args else None
    fired, runs, with_risk, crowded = collections.Counter(), 0, 0, 0
    started = time.perf_counter()
    try:
        for _ in range(rounds):
            for name in ORDER:
                findings = [f for f in examine_file(f"{PUBLIC}/{name}.py:make_loader", limit_s=PROBE_LIMIT_S)]
                runs += 1
                with_risk += any(f.level == "risk" for f in findings)
                crowded += len(findings) > 1
                fired.update((f.level, f.scenario, f.check, name) for f in findings)
    finally:
        if spinner:
            spinner.kill()
            spinner.wait()
    for (level, scenario, check, name), count in sorted(fired.items()):
        print(f"{level:5} {scenario} {check:28} {count:3} of {rounds} runs of {name}")
    print(f"{runs} runs of {len(ORDER)} well-built loaders{' with one core kept busy' if spinner else ''} in "
          f"{time.perf_counter() - started:.0f} s: {with_risk} with a risk, {crowded} with more than one finding")
    return 1 if with_risk else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
