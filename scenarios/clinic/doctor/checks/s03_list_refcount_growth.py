"""03 · copy-on-read: every Python object a forked worker reads gets its page copied."""
from scenarios.clinic.doctor import events
from scenarios.clinic.doctor.findings import MIB, finder, mb

SCENARIO = "03"
# Per worker: a copy beyond 50 MB is no page or two of bookkeeping but the Python objects the worker read (scenario
# 03's broken run copies 100 MB and more, its fixed run under 20; its scripts hold themselves to the same 50).
_COPY_RISK_MB = 50
_LATE_MB_PER_BATCH = 0.05  # growth still going on in the second half of the probe
FIXES = {
    "copy-on-read": "fixes/packed_records.py (PackedRecords: the records in one numpy buffer), or keep the index "
                    "in numpy arrays or tensors instead of lists of dicts and strings",
}
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = "static: an object count, no chance in it. measured: late growth, {growth}; {loaders}. {jobs}"
_found = finder(SCENARIO, FIXES)


def static(examined):
    held, workers = examined.holdings, examined.workers
    if not workers or held.objects < 10_000:
        return []
    size = held.object_bytes
    counted = (("at least " if held.stopped else "about " if held.sampled else "")
               + f"{held.objects:,.0f} Python objects ({mb(size)}) reachable from the dataset"
               + (f", most of them under {held.biggest}" if held.biggest else ""))
    if examined.forked:
        return [_found("risk" if size >= _COPY_RISK_MB * MIB else "note", "copy-on-read",
                       f"{counted}. Each one a forked worker reads has its reference count written, which copies "
                       f"its memory page into that worker: up to {mb(size)} per worker over an epoch, "
                       f"{mb(size * workers)} for {workers} workers")]
    return [_found("note", "copy-on-read", f"{counted}. Under {examined.setup.start_method} each worker unpickles "
                   f"its own copy as it starts: about {mb(size)} per worker, {mb(size * workers)} for {workers}")]


def _worker_growth(samples: list[dict], workers: int) -> tuple[float, float, int] | None:
    """(MB per delivered batch over the first half, over the second half, batches) of the worker
    that grew most in the second half, from the first full round on (a worker's first batch also
    pays for its start: imports, buffers).  Warm-up (an allocator's arenas, lazy imports) stops;
    copy-on-read goes on while the epoch goes on: the second half tells them apart."""
    samples = [s for s in samples if s["uss"]]  # a reading after the workers ended holds none
    base = next((s for s in samples if s["n"] >= workers), None)
    last = samples[-1] if samples else None
    if base is None or last is None or last["n"] - base["n"] < 2 * workers:
        return None
    middle = min((s for s in samples if s["n"] >= base["n"] + workers),
                 key=lambda s: abs(s["n"] - (base["n"] + last["n"]) / 2))
    if last["n"] - middle["n"] < workers:
        return None

    def rate(a, b, pid):
        return (b["uss"][pid] - a["uss"][pid]) / ((b["n"] - a["n"]) / workers)
    pids = [pid for pid in base["uss"] if pid in middle["uss"] and pid in last["uss"]]
    if not pids:
        return None
    worst = max(pids, key=lambda pid: rate(middle, last, pid))
    return rate(base, middle, worst), rate(middle, last, worst), last["n"] - base["n"]


def _growth(setup, probe) -> dict | None:
    """The figures the measured rule decides on: MB per batch early and late, batches, and the late
    rate projected over an epoch, at most the parent's private memory (tests/loaders/false_alarms.py
    records them on healthy loaders)."""
    workers = setup.num_workers
    found = _worker_growth(probe.all(events.MEMORY), workers) if workers else None
    if not found:
        return None
    early_mb, per_batch_mb, delivered = found
    projected = per_batch_mb * (setup.batches or delivered) / workers
    ceiling = (probe.first(events.WORKERS_STARTED) or {}).get("parent_uss")  # a worker copies at most that
    capped = ceiling is not None and projected > ceiling
    return {"early_mb": early_mb, "per_batch_mb": per_batch_mb, "delivered": delivered,
            "projected_mb": min(projected, ceiling) if capped else projected, "capped": capped}


def measured(examined, probe):
    """Growth that goes on: at least _LATE_MB_PER_BATCH late in the probe, and _COPY_RISK_MB over an
    epoch (how near healthy loaders come: HEALTHY)."""
    setup, workers = examined.setup, examined.workers
    if examined.holdings is not None and examined.holdings.only_buffers:
        return []  # tensors and arrays only: a read writes no reference count; growth is another cause
    figures = _growth(setup, probe)
    if not figures or figures["projected_mb"] < _COPY_RISK_MB or figures["per_batch_mb"] < _LATE_MB_PER_BATCH:
        return []  # what grew early (warm-up) and then stopped is no finding
    projected = figures["projected_mb"]
    return [_found("risk" if setup.start_method == "fork" else "note", "copy-on-read",
                   f"measured: each worker's private memory (USS) grew {figures['early_mb']:.2f} MB per batch over "
                   f"the first half of {figures['delivered']} batches and {figures['per_batch_mb']:.2f} MB per batch "
                   f"over the second: growth that goes on, not a warm-up; at that rate a worker holds "
                   f"{projected:,.0f} MB more by the end of an epoch of {setup.batches or '?'} batches"
                   + (" (all of the parent's private memory: the most it can copy)" if figures["capped"] else "")
                   + f", {projected * workers:,.0f} MB for {workers}",
                   figures={"projected_mb": round(projected, 1), "per_batch_mb": round(figures["per_batch_mb"], 3),
                            "workers": workers})]


def running(job):
    """A worker whose private memory (USS) climbed at every sample, told by what grew: pages copied
    from the training process (a forked worker's inherited pages turn private, its resident memory
    flat: copy-on-read) or its own allocations (resident memory grows as much: a cache or batches
    a worker keeps, no copy; a note)."""
    climbing = [w for w in job.workers if len(w.uss_mb) >= 3 and all(b > a for a, b in zip(w.uss_mb, w.uss_mb[1:]))
                and w.uss_mb[-1] - w.uss_mb[0] >= 20]
    if not climbing:
        return []
    worst = max(climbing, key=lambda w: w.uss_mb[-1] - w.uss_mb[0])
    grew = worst.uss_mb[-1] - worst.uss_mb[0]
    copied = grew - (worst.rss_mb[-1] - worst.rss_mb[0]) if len(worst.rss_mb) == len(worst.uss_mb) else grew
    measured = (f"measured in the running job: {len(climbing)} of {len(job.workers)} workers' private memory (USS) "
                f"climbed at every sample; worker {worst.pid} from {worst.uss_mb[0]:,.0f} to "
                f"{worst.uss_mb[-1]:,.0f} MB in {job.seconds:.1f} s ({grew / job.seconds:,.1f} MB/s)")
    if copied >= 0.5 * grew:
        return [_found("risk", "copy-on-read", f"{measured}, {copied:,.0f} MB of it pages it shared with the training "
                       "process until it read them (its resident memory stayed flat): copied, not allocated")]
    return [_found("note", "copy-on-read", f"{measured}, but its resident memory grew as much: its own allocations "
                   "(a cache each worker fills, or batches it keeps), not pages copied from the training process")]
