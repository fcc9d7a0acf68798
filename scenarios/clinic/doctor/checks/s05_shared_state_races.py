"""05 · state written in __getitem__ stays in each worker's copy; locks made in the wrong context."""
from scenarios.clinic.doctor import events
from scenarios.clinic.doctor.findings import finder
from scenarios.clinic.doctor.holdings import library_class

SCENARIO = "05"
FIXES = {
    "state-written-in-getitem": "keep state that must be shared in the main process (a Sampler: "
                                "fixes/instance_draws.py), or in shared memory with a lock",
    "lock-context": "make the lock (or Value, Queue) with the loader's own context: "
                    "ctx = multiprocessing.get_context(method); ctx.Lock(), and pass multiprocessing_context=ctx",
}
ERRORS = [(r"SemLock created in a fork context", "lock-context")]
# How often a healthy loader trips each rule, measured (tests/loaders/false_alarms.py, tests/jobs/false_alarms.py).
HEALTHY = ("the same reads change the same attributes, no chance in it: 0 in 360 runs of the 30 well-built "
           "public loaders")
_found = finder(SCENARIO, FIXES)


def measured(examined, probe):
    """A risk where reading samples changed state that is not a cache (a list of bad indices, a mask of
    what was drawn, a count): each worker keeps its own, so the main process and the other workers never
    see it.  A mapping (samples kept by index) is a cache: a risk where the workers are not persistent (each
    epoch's workers start from the main process's empty copy), else a note (a copy per worker).
    No chance in it: the same reads change the same attributes.  On the 30 well-built public loaders
    (tests/loaders/public/) it names none; a lazily opened handle (None before the reads) is no change."""
    compare = probe.first(events.COMPARE)
    if not (compare and compare.get("changed_attributes") and examined.workers):
        return []
    if library_class(examined.loader.dataset):
        return []  # a library's own iteration bookkeeping (datasets' _state_dict): nothing the user wrote
    changed, caches = compare["changed_attributes"], set(compare.get("changed_caches", []))
    state = [name for name in changed if name not in caches and not any(c.startswith(name + ".") for c in caches)]
    listed = ", ".join((state or changed)[:4])
    if state:
        return [_found("risk", "state-written-in-getitem",
                       f"measured: reading {compare['batches']} batches in one process changed {listed}, which is "
                       "no cache of samples by index. With workers each one changes its own copy: the main process "
                       "and the other workers never see those changes (what has been drawn, skipped or counted)")]
    if not examined.setup.persistent_workers:  # new workers each epoch, each from the main process's empty copy
        return [_found("risk", "state-written-in-getitem",
                       f"measured: reading {compare['batches']} batches in one process filled {listed}, a cache. "
                       "With workers each one fills its own copy and is gone at the epoch's end: the next epoch's "
                       "workers start from the main process's copy, still empty, so no epoch reads from the cache")]
    return [_found("note", "state-written-in-getitem",
                   f"measured: reading {compare['batches']} batches in one process filled {listed}, a cache: each "
                   "persistent worker fills its own copy (memory times the workers, and a hit only for the indices "
                   "that worker is given again); the main process never sees it")]
