"""How often `doctor --pid` trips on a healthy running job: tests/jobs/healthy.py,
busy_healthy.py (a job whose model keeps a core busy), epochs.py (short epochs of a training
and a validation loader, with non-persistent workers started by fork and by spawn, and with
persistent ones: nearly every examination crosses an epoch's end) and even_ranks.py (a 2-rank DDP
job whose ranks meet in a collective every step) each started once and examined
ROUNDS times while they run, each finding counted by its rule (every finding is a false alarm).

    python tests/jobs/false_alarms.py [ROUNDS] [--seconds S] [--record FILE]

Each examination reads the job for S seconds (2 unless told), as `doctor --pid` does.  --record
appends each examination to FILE as a JSON line: the records the checks' HEALTHY figures are rendered
from (scenarios/clinic/doctor/healthy.py).
"""
import collections
import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

import torch

JOBS = Path(__file__).resolve().parent
sys.path.insert(0, str(JOBS.parents[1]))

from scenarios.clinic.doctor.engine import examine_running  # noqa: E402  (after sys.path names the repository: run as a script)
from scenarios.clinic.doctor import checks  # noqa: E402  (the same)
from scenarios.clinic.measured import this_machine  # noqa: E402  (the same)

MACHINE = dataclasses.asdict(this_machine(torch.__version__))
CHECKS = sorted(check.SCENARIO for check in checks.CHECKS)   # a check added later is not judged by these runs
HEALTHY = ["healthy", "busy_healthy", "epochs transient 12 fork", "epochs persistent 12 fork",
           "epochs transient 12 spawn", "even_ranks 600"]


def examine_job(name: str, rounds: int, seconds: float, record: Path | None) -> collections.Counter:
    script, *args = name.split()
    job = subprocess.Popen([sys.executable, str(JOBS / f"{script}.py"), *args], stdout=subprocess.PIPE, text=True,
                           start_new_session=True)
    fired = collections.Counter()
    try:
        if not job.stdout.readline().startswith("started"):
            raise SystemExit(f"{name}.py did not start")
        time.sleep(2.0)
        for _ in range(rounds):
            findings = examine_running(job.pid, seconds)
            found = [(f.level, f.scenario, f.check) for f in findings]
            crossed = "within the window" in findings.probe_status   # a loader's workers started or ended
            fired.update(found)
            fired["runs"] += 1
            fired["crossed"] += crossed
            if record:
                with record.open("a") as out:
                    out.write(json.dumps({"job": name, "findings": found, "crossed": crossed, "checks": CHECKS,
                                          "machine": MACHINE}) + "\n")
    finally:  # the trainer first: its workers and multiprocessing's resource tracker then end by themselves
        job.terminate()
        job.wait(timeout=30)
        time.sleep(3.0)
        subprocess.run(["pkill", "-KILL", "-s", str(job.pid)], check=False)  # anything of its session left
    return fired


def main(args) -> int:
    rounds = int(next((a for a in args if a.isdigit()), "50"))
    only = [name for name in HEALTHY if any(a in name for a in args if not a.replace(".", "").isdigit())]
    seconds = float(args[args.index("--seconds") + 1]) if "--seconds" in args else 2.0
    record = Path(args[args.index("--record") + 1]) if "--record" in args else None
    findings = 0
    for name in only or HEALTHY:
        fired = examine_job(name, rounds, seconds, record)
        runs, crossed = fired.pop("runs"), fired.pop("crossed", 0)
        for (level, scenario, check), count in sorted(fired.items()):
            print(f"{level:5} {scenario} {check:28} {count:3} of {runs} examinations of {name}")
            findings += count
        print(f"{name}: {runs} examinations of {seconds:g} s ({crossed} saw workers start or end), "
              f"{sum(fired.values())} finding(s)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
