"""08 · descriptors each kept batch holds against `ulimit -n`; /dev/shm files left behind."""
from scenarios.clinic.doctor import events
from scenarios.clinic.doctor.findings import finder

SCENARIO = "08"
FIXES = {
    "descriptor-budget": "fixes/open_files.py (copy_out_of_shared_memory(batch) for what the loop keeps), or raise "
                         "`ulimit -n`",
    "shm-leak": "keep the default file_descriptor strategy and raise `ulimit -n`, or copy kept batches "
                "(fixes/open_files.py: copy_out_of_shared_memory); remove torch_* files of dead jobs",
}
# "received 0 items of ancdata": the same limit as torch < 1.5 reported it (pytorch/pytorch#973, #34768).
ERRORS = [(r"Too many open files|received 0 items of ancdata", "descriptor-budget")]
# torch's tensor sharing by descriptor (its reductions send each storage's fd): out of descriptors
# there, 08's lesson holds whether a DataLoader or the script's own processes share the tensors.
CONTEXT = r"torch[/\\]multiprocessing[/\\]reductions\.py"
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = "descriptors per kept batch against ulimit -n, arithmetic, no chance in it: {loaders}. {jobs}"
_found = finder(SCENARIO, FIXES)


def static(examined):
    import torch.multiprocessing

    if not examined.workers or torch.multiprocessing.get_sharing_strategy() != "file_system":
        return []
    return [_found("note", "shm-leak",
                   "the sharing strategy is file_system: each tensor a worker sends is a named file in /dev/shm, and "
                   "a process killed with SIGKILL (the OOM killer) leaves its files behind until reboot")]


def measured(examined, probe):
    findings = []
    first, start = probe.first(events.FIRST_BATCH), probe.first(events.STARTED) or {}
    if first and examined.workers:
        findings += _budget(examined.setup, first, probe.all(events.MEMORY), start)
    if probe.leaked_shm:
        findings.append(_found("note", "shm-leak",
                               f"the probe's processes left {len(probe.leaked_shm)} file(s) in /dev/shm "
                               f"({', '.join(probe.leaked_shm[:3])}); the doctor removed them"))
    return findings


def _budget(setup, first, samples, start):
    soft, per_batch = start.get("fd_soft_limit"), first.get("storages", 0)
    if start.get("sharing_strategy") != "file_descriptor" or not soft or not per_batch:
        return []
    in_use = max((s.get("fds") or 0 for s in samples), default=0)
    keepable = max(soft - in_use, 0) // per_batch
    requested = setup.num_workers * (setup.prefetch_factor or 2) + 2
    level = "risk" if keepable < requested else "note"
    # A note only where the limit is within reach of this job: fewer kept batches than one epoch
    # holds.  A budget of ~10,000 batches against an epoch of 500 is true of every small batch.
    within_reach = level == "risk" or (setup.batches is not None and keepable < setup.batches)
    return [_found(level, "descriptor-budget",
                   f"each batch holds {per_batch} descriptor(s) while it lives (sharing strategy file_descriptor: "
                   f"one per tensor storage); ulimit -n is {soft} and the probe's process used {in_use}: a loop that "
                   "keeps its batches (labels or outputs gathered for a metric) fails with \"Too many open files\" "
                   f"after about {keepable:,} kept batches"
                   + (f", fewer than the {requested} in flight" if level == "risk" else ""), general=not within_reach)]


def running(job):
    """Descriptors by what holds them: torch's shared-memory ones (one per tensor storage of a
    kept or in-flight batch), against the limit; not a fixed share of it.  A risk when they hold
    more than the limit leaves: what brought the job here, once more, breaks it.  Their trend over
    the window is told, never a reason (a healthy job's count rises while its workers ramp up).
    Why a healthy job cannot trip it: a loop that keeps no batch holds at most the batches in
    flight (workers × prefetch_factor + 1) times their storages, so it trips only where those alone
    hold half its limit, which is this scenario's own fault (the probe's "fewer than … in flight")."""
    samples = [s for s in job.fd_samples if s[1] is not None]
    if not samples or not job.fd_limit:
        return []
    (t0, _, torch0), (t1, total, held) = samples[0], samples[-1]
    left = job.fd_limit - total
    if held <= left:
        return []
    rate = (held - torch0) / (t1 - t0) if t1 > t0 else 0.0
    trend = f"rising {rate:,.1f}/s over {t1 - t0:.1f} s" if rate > 0 else f"not rising over {t1 - t0:.1f} s"
    return [_found("risk", "descriptor-budget",
                   f"the training process holds {total:,} open descriptors against its limit of {job.fd_limit:,}; "
                   f"{held:,} of them are torch's shared-memory descriptors ({trend}), each a tensor storage a kept "
                   f"or in-flight batch holds: more than the {left:,} the limit leaves, so as many again kept "
                   "brings \"Too many open files\"",
                   figures={"open": total, "limit": job.fd_limit, "torch_shared": held})]
