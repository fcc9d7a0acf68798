"""17 · a process pool in a worker: a daemon process may not have children."""
import re

from scenarios.clinic.doctor import events
from scenarios.clinic.doctor.findings import finder, merge_same
from scenarios.clinic.doctor.holdings import code_sources

SCENARIO = "17"
FIXES = {
    "pool-on-dataset": "fixes/inner_parallelism.py (parallel_map: safe in a worker); or "
                       "create the pool inside the worker, as a thread pool (concurrent.futures.ThreadPoolExecutor): "
                       "a worker is a daemon process and may not start processes of its own",
    "pool-in-worker": "fixes/inner_parallelism.py (parallel_map: safe in a worker); or "
                      "use a thread pool inside the worker (concurrent.futures.ThreadPoolExecutor), or more "
                      "DataLoader workers instead of a pool in each; a worker is a daemon process",
}
ERRORS = [(r"daemonic processes are not allowed to have children", "pool-in-worker")]
# multiprocessing refuses a child to any daemonic process (a DataLoader's worker, a Pool's): the
# lesson, threads there or the pool moved out, is the same whichever daemonic process it was.
LIKELY = [(r"daemonic processes are not allowed to have children", "pool-in-worker",
           "multiprocessing refuses a child to a daemonic process, which DataLoader and Pool workers are")]
# A process pool made in code the worker runs; a ThreadPool or ThreadPoolExecutor is fine there.
_PROCESS_POOL = re.compile(r"\b(?:multiprocessing\.|mp\.|ctx\.|context\.)?(?:Pool|ProcessPoolExecutor)\s*\(")
_READ_IN_SOURCE = "the code the workers run makes a process pool"
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = "read from the dataset, no chance in it: {loaders}"
_found = finder(SCENARIO, FIXES)


def static(examined):
    if not examined.workers:
        return []
    findings = [_found("risk", "pool-on-dataset",
                       f"{path} is a {type(obj).__qualname__} made in the main process. In a forked worker its helper "
                       "threads do not exist, so work submitted there is never picked up; under spawn it cannot be "
                       "pickled at all") for path, obj in examined.found("pool")]
    # The user's own code: a library's class also holds main-process methods that make pools
    # (datasets' map(num_proc=…)); a pool a library makes in a worker is caught by its error.
    sources, _ = code_sources(examined.loader, own_only=True)
    called = next((m.group(0).rstrip("( ") for s in sources for m in _PROCESS_POOL.finditer(s)
                   if "ThreadPool" not in s[max(0, m.start() - 6):m.end()]), None)
    if called and not findings:
        findings.append(_found("risk", "pool-in-worker",
                               f"{_READ_IN_SOURCE} ({called}(…)): inside a DataLoader "
                               "worker, a daemon process, that raises \"daemonic processes are not allowed to have "
                               "children\""))
    return findings


def merge(findings, probe):
    """A pool only read in the source, while the probe's workers delivered batches without the
    daemonic error, becomes a note: the class's text also holds code that runs in the main
    process (__init__ scanning files with a Pool, a download step).  The error, when the probe
    meets it, stays a risk (the default rule joins it to the source's finding)."""
    batches = len(probe.all(events.BATCH)) if probe is not None and probe.outcome == "completed" else 0
    for finding in findings:
        if batches and finding.check == "pool-in-worker" and finding.evidence.startswith(_READ_IN_SOURCE):
            finding.level = "note"
            finding.evidence += (f"; yet the probe's workers delivered {batches} batch(es) without that error: the "
                                 "pool is likely made in the main process only (__init__, a preparation step). "
                                 "Check that no path of __getitem__ reaches it")
    return merge_same(findings, probe)
