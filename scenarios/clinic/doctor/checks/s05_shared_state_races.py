"""05 · state written in __getitem__ stays in each worker's copy; locks made in the wrong context."""
from scenarios.clinic.doctor import events
from scenarios.clinic.doctor.findings import finder
from scenarios.clinic.doctor.holdings import library_class

SCENARIO = "05"
FIXES = {
    "state-written-in-getitem": "keep state that must be shared in the main process (a Sampler: "
                                "fixes/instance_draws.py), or in shared memory with a lock",
    "cache-per-worker": "fill the cache before the workers start (it is then shared, read-only), or keep the "
                        "workers for the whole run (persistent_workers=True): each worker then keeps its own",
    "lock-context": "make the lock (or Value, Queue) with the loader's own context: "
                    "ctx = multiprocessing.get_context(method); ctx.Lock(), and pass multiprocessing_context=ctx",
}
ERRORS = [(r"SemLock created in a fork context", "lock-context")]
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = ("a risk only where the probe sees the fault: the re-reads use fixed seeds, and a re-read that does not "
           "repeat or runs out of time gives no verdict: {loaders}. When the rule moved from the code's shape to the"
           " probe (issue 35), one run each of 45 well-built loaders (the public ones and the 15 of the earlier "
           "held-out loader sets; 44 reached the probe's compare stage) gave 0 risks and 0 notes, where the old rule"
           " gave 2 risks (a Manager().dict() cache, a torchtext stream), and 3 more on loaders faulty otherwise "
           "(two h5py files, a torchio queue: then 0 risks, 1 note); the 3 loaders labelled 05 stayed risks")
_found = finder(SCENARIO, FIXES)


def _observed(compare) -> tuple[list, list, int]:
    """(attributes the reads changed whose workers' writes never reached the main process, those of them
    the reads made longer, how many re-read samples came out otherwise after the reads)."""
    lost = list(compare.get("lost", []))
    grown = [name for name in lost if name in compare.get("grown", [])]
    return lost, grown, compare.get("depends") or 0


def measured(examined, probe):
    """Each worker reads and writes its own copy of the dataset.  A risk where the probe sees that matter:
    reading samples in one process changed an attribute, the workers' reads left the main process's copy as
    it was (their writes never reach it), and either the samples depend on it (the same indices read with
    the same seeds before and after the reads come out otherwise: each worker draws from its own copy), or
    the reads grew it (a record, a cache) and the workers are not persistent (each epoch's workers start
    from the main process's copy, still empty).  Otherwise, at most a note: what the code writes is seen,
    not a fault.  A lazily opened handle (None before the reads) is no change."""
    compare = probe.first(events.COMPARE)
    if not (compare and compare.get("changed_attributes") and examined.workers):
        return []
    if library_class(examined.loader.dataset):
        return []  # a library's own iteration bookkeeping (datasets' _state_dict): nothing the user wrote
    lost, grown, depends = _observed(compare)
    if not lost:
        return []  # the workers' writes reached the main process (a Manager proxy, shared memory), or none seen
    batches, listed = compare["batches"], ", ".join(lost[:4])
    unchanged = (f"After the batches read through {examined.workers} workers the main process's copy of {listed} "
                 "is as it was before: each worker changed its own")
    if depends:
        return [_found("risk", "state-written-in-getitem",
                       f"measured: reading {batches} batches in one process changed {listed}; {depends} of "
                       f"{compare.get('reads', depends)} samples read again with the same seeds came out otherwise "
                       f"after those reads: what the dataset returns depends on that state. {unchanged} copy, so "
                       "the workers draw from copies that diverge (what has been drawn, skipped or counted)")]
    caches = set(compare.get("changed_caches", []))
    check = "cache-per-worker" if all(name in caches for name in grown) else "state-written-in-getitem"
    if grown and not examined.setup.persistent_workers:
        return [_found("risk", check,
                       f"measured: reading {batches} batches in one process grew {', '.join(grown[:4])}. {unchanged}, "
                       "and the workers are not persistent: each epoch's workers start again from the main "
                       "process's copy, so what was recorded or cached is lost every epoch and never seen by the "
                       "main process")]
    if not grown and examined.setup.iterable:
        return []  # where a stream is in its iteration: each process that iterates keeps its own, by design
    told = "The samples do not depend on it" if compare.get("depends") == 0 else \
        "Whether the samples depend on it could not be seen (reads under fixed seeds did not repeat, or could not run)"
    return [_found("note", check if grown else "state-written-in-getitem",
                   f"measured: reading {batches} batches in one process changed {listed}. {unchanged}. {told}; "
                   "if the main process reads it after the loop, it never sees the workers' changes")]
