"""04 · batches in flight against a small /dev/shm."""
import os

from scenarios.clinic.doctor.evidence import in_flight
from scenarios.clinic.doctor.findings import finder, mb

SCENARIO = "04"
FIXES = {
    "shm-in-flight": "fixes/memory_in_flight.py (plan_in_flight lowers prefetch_factor, then num_workers, to fit "
                     "the free /dev/shm), or a larger /dev/shm (docker run --shm-size=…)",
}
# torch's allocator writing a shared-memory file (/torch_PID_N) fails when /dev/shm is full, with or
# without the errno a paste keeps.
ERRORS = [(r"unable to allocate shared memory|unable to write to file </torch_|No space left on device|Bus\s+error"
           r"|dataloader's workers are out of shared memory", "shm-in-flight")]
# torch/csrc/DataLoader.cpp: a worker's own SIGBUS handler, printed even when no traceback is pasted.
LOG_TEXTS = [(r"ERROR: Unexpected bus error encountered in worker\. This might be caused by insufficient shared memory",
              "shm-in-flight")]
# "killed by signal: Bus error" is also 06's "killed by signal": a full /dev/shm is the lesson.
WINS_OVER = ("06",)
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = "arithmetic on the batches' size against this machine's /dev/shm, no chance in it: {loaders}. {jobs}"
_found = finder(SCENARIO, FIXES)


def measured(examined, probe):
    from fixes.memory_in_flight import shm_free_bytes

    figures = in_flight(examined.setup, probe)
    free = shm_free_bytes() if os.path.isdir("/dev/shm") else None
    if figures is None or free is None or figures["bytes"] <= free * 0.5:
        return []
    over = figures["bytes"] > free
    return [_found("risk" if over else "note", "shm-in-flight",
                   f"{figures['arithmetic']}, against {mb(free)} free in /dev/shm" + (
                      ": workers will fail with \"unable to allocate shared memory\" or wait forever"
                      if over else ": more than half of it"))]


def running(job):
    if not job.shm_total or job.shm_bytes < 0.5 * job.shm_total:
        return []
    share = job.shm_bytes / job.shm_total
    return [_found("risk" if share > 0.8 else "note", "shm-in-flight",
                   f"this job's torch files hold {mb(job.shm_bytes)} of the {mb(job.shm_total)} /dev/shm "
                   f"({share:.0%})")]
