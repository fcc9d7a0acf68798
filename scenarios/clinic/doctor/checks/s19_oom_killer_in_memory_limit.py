"""19 · the kernel's OOM killer inside a memory limit: a worker "killed by signal: Killed"."""
import os

from scenarios.clinic.doctor.findings import finder, mb
from scenarios.memory_cgroup import memory_cgroup_of

SCENARIO = "19"
FIXES = {
    "oom-killed": "find what each process holds against the limit (scenario 03: a worker's copy of a Python index, "
                  "fixes/packed_records.py; scenario 10: batches in flight, fixes/memory_in_flight.py's plan_in_flight "
                  "with memory_budget_mb); then size num_workers and prefetch_factor to the cgroup's limit",
}
# SIGKILL from the kernel's OOM killer, as PyTorch names it (torch/utils/data/_utils/signal_handling.py),
# and the kernel's own line.  Ahead of 06's generic "killed by signal" in the error table.
ERRORS = [(r"killed by signal: Killed|Memory cgroup out of memory: Killed process", "oom-killed")]
# SIGKILL, as a launcher or an executor reports a child's end: the OOM killer sends it when memory
# runs out (a person's `kill -9` is the other sender, and says so).
LIKELY = [(r"terminated with (?:exit )?code -9\b|terminated with signal SIGKILL|SIGKILL\(-9\)|exit ?code[ =:]+-9\b"
           r"|signal 9: SIGKILL|exit code 137\b",   # a shell's 128 + 9
           "oom-killed", "a child ended by SIGKILL, which the kernel's OOM killer sends when memory runs out")]
# "killed by signal: Killed" is also 06's "killed by signal": the kernel's OOM killer is the lesson.
WINS_OVER = ("06",)
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = "arithmetic against the memory limit, no chance in it: {loaders}. {jobs}"
_found = finder(SCENARIO, FIXES)


def static(examined):
    group = memory_cgroup_of(os.getpid())
    if not (examined.workers and group.get("oom_kills")):
        return []
    return [_found("note", "oom-killed",
                   f"this job's memory cgroup has counted {group['oom_kills']} OOM kill(s) already"
                   + (f" (limit {mb(group['limit'])})" if group.get("limit") else ""))]


def running(job):
    kills, usage, limit = job.cgroup.get("oom_kills"), job.cgroup.get("usage"), job.cgroup.get("limit")
    if not kills:
        return []
    return [_found("risk", "oom-killed",
                   f"the job's memory cgroup counted {kills} OOM kill(s)"
                   + (f"; it holds {mb(usage)} of its {mb(limit)} limit" if usage and limit else "")
                   + ": the kernel killed the process with the most memory, a worker (\"killed by signal: Killed\") "
                   "or the training process itself")]
