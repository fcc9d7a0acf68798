"""10 · batches in flight against the job's memory; a worker out of memory."""
from scenarios.clinic.doctor.evidence import in_flight
from scenarios.clinic.doctor.findings import finder, mb
from scenarios.host import memory_headroom

SCENARIO = "10"
FIXES = {
    "memory-in-flight": "fixes/memory_in_flight.py (plan_in_flight(…, memory_budget_mb=…) sizes prefetch_factor "
                        "and num_workers to a budget); fixes/packed_records.py if workers grow (scenario 03)",
    # Not scenario 02's skip-bad-samples: every sample would be skipped.
    "worker-out-of-memory": "a worker ran out of memory: measure what each worker holds (scenario 03's copy-on-read "
                            "growth, this scenario's batches in flight); fixes/packed_records.py, or "
                            "fixes/memory_in_flight.py's plan_in_flight with memory_budget_mb",
}
# Host memory only: a worker's CUDA out of memory is scenario 26's (a CUDA context per worker).
ERRORS = [(r"MemoryError|Unable to allocate [\d.]+ \w?i?B|Cannot allocate memory"
           r"|(?<!CUDA )(?<!CUDA error: )out of memory|unable to mmap \d+ bytes", "worker-out-of-memory")]
_WITHIN_REACH = 0.25   # of the memory left: a note from there on; a risk beyond all of it
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = "arithmetic on the batches' size against the memory left: {loaders}. {jobs}"
_found = finder(SCENARIO, FIXES)


def measured(examined, probe):
    figures = in_flight(examined.setup, probe)
    if figures is None:
        return []
    headroom, headroom_from = memory_headroom()
    peak = figures["peak"]
    # Below a quarter of the memory left, what is in flight is no reason to look: a general note (--all).
    return [_found("risk" if peak > headroom else "note", "memory-in-flight",
                   figures["arithmetic"]
                   + (f", plus {mb(figures['pinned'])} of pinned copies" if figures["pinned"] else "")
                   + f"; with each worker's own memory, up to {mb(peak)}, {peak / max(headroom, 1):.0%} of the "
                   f"{mb(headroom)} {headroom_from}", general=peak < _WITHIN_REACH * headroom)]


def running(job):
    usage, limit = job.cgroup.get("usage"), job.cgroup.get("limit")
    if not usage or not limit or usage < 0.9 * limit:
        return []
    return [_found("risk", "memory-in-flight",
                   f"the job's memory cgroup is at {mb(usage)} of its {mb(limit)} limit ({usage / limit:.0%}): the "
                   "kernel's OOM killer is next")]
