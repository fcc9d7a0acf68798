"""How often `doctor --pid` trips on a healthy running job: tests/jobs/healthy.py and
busy_healthy.py (a job whose model keeps a core busy) each started once and examined ROUNDS times
while they run, each finding counted by its rule (every risk is a false alarm).

    python tests/jobs/false_alarms.py [ROUNDS] [--seconds S]

Each examination reads the job for S seconds (2 unless told), as `doctor --pid` does.
"""
import collections
import subprocess
import sys
import time
from pathlib import Path

JOBS = Path(__file__).resolve().parent
sys.path.insert(0, str(JOBS.parents[1]))

from scenarios.clinic.doctor.engine import examine_running  # noqa: E402  (after sys.path names the repository: run as a script)

HEALTHY = ["healthy", "busy_healthy"]


def examine_job(name: str, rounds: int, seconds: float) -> collections.Counter:
    job = subprocess.Popen([sys.executable, str(JOBS / f"{name}.py")], stdout=subprocess.PIPE, text=True,
                           start_new_session=True)
    fired = collections.Counter()
    try:
        if not job.stdout.readline().startswith("started"):
            raise SystemExit(f"{name}.py did not start")
        time.sleep(2.0)
        for _ in range(rounds):
            fired.update((f.level, f.scenario, f.check) for f in examine_running(job.pid, seconds))
            fired["runs"] += 1
    finally:  # the trainer first: its workers and multiprocessing's resource tracker then end by themselves
        job.terminate()
        job.wait(timeout=30)
        time.sleep(3.0)
        subprocess.run(["pkill", "-KILL", "-s", str(job.pid)], check=False)  # anything of its session left
    return fired


def main(args) -> int:
    rounds = int(next((a for a in args if a.isdigit()), "50"))
    seconds = float(args[args.index("--seconds") + 1]) if "--seconds" in args else 2.0
    risks = 0
    for name in HEALTHY:
        fired = examine_job(name, rounds, seconds)
        runs = fired.pop("runs")
        for (level, scenario, check), count in sorted(fired.items()):
            print(f"{level:5} {scenario} {check:28} {count:3} of {runs} examinations of {name}")
            risks += count if level == "risk" else 0
        print(f"{name}: {runs} examinations of {seconds:g} s, {sum(fired.values())} finding(s)")
    return 1 if risks else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
