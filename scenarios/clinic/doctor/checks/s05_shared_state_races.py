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
_found = finder(SCENARIO, FIXES)


def measured(examined, probe):
    compare = probe.first(events.COMPARE)
    if not (compare and compare.get("changed_attributes") and examined.workers):
        return []
    if library_class(examined.loader.dataset):
        return []  # a library's own iteration bookkeeping (datasets' _state_dict): nothing the user wrote
    changed = ", ".join(compare["changed_attributes"][:4])
    return [_found("note", "state-written-in-getitem",
                   f"measured: reading {compare['batches']} batches in one process changed {changed}. With workers "
                   "each one changes its own copy: the main process and the other workers never see those changes "
                   "(fine for a cache, wrong for state meant to be shared, such as what has been drawn)")]
