"""`doctor --pid` (and `--orphans` for a job that kills itself) on a folder of training jobs with an
EXPECT.json (file: the scenarios it must name at risk level; [] a healthy job), each started once
and examined ROUNDS times while it runs.

    python tests/jobs/corpus_jobs.py FOLDER [ROUNDS] [--seconds S]
"""
import collections
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

JOBS = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(JOBS.parents[1]))

from scenarios.clinic.doctor.engine import examine_running  # noqa: E402  (after sys.path names the repository)
from scenarios.clinic.doctor.orphans import find_orphans  # noqa: E402


def _orphans_of(job: subprocess.Popen) -> set[str]:
    job.wait(timeout=60)   # the job kills itself; its workers stay
    time.sleep(2)
    left = [o for o in find_orphans(stacks=False) if _session(o.pid) == job.pid]
    for orphan in left:
        subprocess.run(["kill", "-KILL", str(orphan.pid)], check=False)
    return {"20"} if left else set()


def _session(pid: int) -> int:
    try:
        return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[3])
    except (OSError, ValueError, IndexError):
        return -1


def _wait_for_workers(pid: int, most_s: float = 120.0) -> None:
    """Until a process of the job's session is a DataLoader worker (torch names it so), and 4 s more:
    on a loaded machine importing torch alone takes tens of seconds."""
    deadline = time.monotonic() + most_s
    while time.monotonic() < deadline and not any(
            _session(int(p)) == pid and _comm(int(p)) == "pt_data_worker" for p in os.listdir("/proc") if p.isdigit()):
        time.sleep(0.5)
    time.sleep(4)


def _comm(pid: int) -> str:
    try:
        return open(f"/proc/{pid}/comm").read().strip()
    except OSError:
        return ""


def run(path: pathlib.Path, rounds: int, seconds: float, expected: set[str]) -> collections.Counter:
    job = subprocess.Popen([sys.executable, str(path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    named = collections.Counter()
    try:
        _wait_for_workers(job.pid)
        if "20" in expected:
            named.update(_orphans_of(job))
            named["runs"] += 1
            return named
        for _ in range(rounds):
            named.update({f.scenario for f in examine_running(job.pid, seconds) if f.level == "risk"})
            named["runs"] += 1
    finally:
        if job.poll() is None:
            job.send_signal(signal.SIGKILL)
            job.wait(timeout=30)
        time.sleep(2)
        subprocess.run(["pkill", "-KILL", "-s", str(job.pid)], check=False)
    return named


def main(args: list[str]) -> int:
    folder = pathlib.Path(args[0])
    rounds = int(next((a for a in args[1:] if a.isdigit()), "3"))
    seconds = float(args[args.index("--seconds") + 1]) if "--seconds" in args else 3.0
    wrong = 0
    for name, expected in sorted(json.loads((folder / "EXPECT.json").read_text()).items()):
        named = run(folder / name, rounds, seconds, set(expected))
        runs = named.pop("runs", 0)
        others = {s: n for s, n in named.items() if s not in expected}
        wrong += bool(others) or bool(expected and not all(named[s] == runs for s in expected))
        print(f"{name}: expected {expected or 'nothing'}; named {dict(named) or 'nothing'} in {runs} examination(s)"
              + (f"; FALSE {others}" if others else ""))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
