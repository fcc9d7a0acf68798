"""Scenario 08, myth check: does the `file_system` strategy leak when a job is killed?

    python scenarios/08_too_many_open_files/myth_file_system_leak.py

"A deep dive into PyTorch DataLoader with Multiprocessing" calls `file_system`
"prone to shared memory leaks".  This starts fixed_file_system.py twice and
kills it halfway, while it holds some 200 named files in /dev/shm:
  1. SIGKILL to the training process alone, as the OOM killer picks one process;
  2. SIGKILL to every process of the job at once, its torch_shm_managers
     included, as a scheduler's `scancel` or `systemctl kill` do to a cgroup.
Expect: nothing left after 1 (the managers unlink the files), some 200 files
after 2, which this script counts, removes, and reports by exiting non-zero.
"""
import subprocess
import sys
import time
from pathlib import Path

import psutil

from scenarios.host import become_subreaper
from scenarios.instruments import remove_torch_shm_files, torch_shm_files

JOB = [sys.executable, str(Path(__file__).with_name("fixed_file_system.py"))]
KILL_AT_BATCH = 200
EXIT_TIMEOUT_S = 15  # workers notice a dead parent within 5 s, then the managers clean up


def start_job_and_wait_for_files():
    job = subprocess.Popen(JOB, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    for line in job.stdout:
        seen.append(line)
        if line.startswith("batch ") and int(line.split()[1].rstrip(":")) >= KILL_AT_BATCH:
            break
    else:
        sys.exit(f"the job ended (exit {job.wait()}) before batch {KILL_AT_BATCH}:\n{''.join(seen)}")
    processes = [psutil.Process(job.pid), *psutil.Process(job.pid).children(recursive=True)]
    workers = [child.pid for child in psutil.Process(job.pid).children()]
    return job, processes, workers


def files_left_after(kill, label):
    job, processes, workers = start_job_and_wait_for_files()
    held = len(torch_shm_files(workers))
    killed_at = time.monotonic()
    for process in kill(processes):
        process.kill()
    # Orphans come to us (subreaper below), so waiting reaps them too.
    _, alive = psutil.wait_procs(processes, timeout=EXIT_TIMEOUT_S)
    seconds = time.monotonic() - killed_at
    for process in alive:
        process.kill()
    job.wait()
    job.stdout.close()
    left = len(torch_shm_files(workers))
    print(f"{label}: the job held {held} files in /dev/shm; {left} left after "
          f"{len(processes) - len(alive)} of its {len(processes)} processes exited "
          f"within {seconds:.1f} s")
    return held, left, workers, seconds


def main():
    become_subreaper()
    held, left_main, _, seconds = files_left_after(lambda procs: procs[:1],
                                                   "SIGKILL to the training process")
    print(f"metric shm_files_held_main_killed={held}")
    print(f"metric shm_files_left_main_killed={left_main}")
    print(f"metric seconds_until_exited_main_killed={seconds:.1f}")
    # MYTH: "prone to shared memory leaks": only when the torch_shm_managers die with the job.
    held, left_job, workers, _ = files_left_after(lambda procs: procs, "SIGKILL to the whole job")
    print(f"metric shm_files_held_job_killed={held}")
    print(f"metric shm_files_left_job_killed={left_job}")
    removed = remove_torch_shm_files(workers)
    print(f"metric shm_files_removed={len(removed)}")
    if left_job:
        sys.exit(f"{left_job} /dev/shm/torch_* files outlived the killed job (removed "
                 f"{len(removed)} now); killing the training process alone left {left_main}")


if __name__ == "__main__":
    main()
