"""07 · how many workers: loading that waits, workers beyond the cores, workers slower than none."""
from scenarios.clinic.doctor import events, waits
from scenarios.clinic.doctor.findings import finder, text_finder
from scenarios.clinic.doctor.job import idle_workers, stuck_workers, waits_for_data
from scenarios.instruments import BUSY_SHARE

SCENARIO = "07"
FIXES = {
    "workers-vs-cores": "num_workers at most the usable cores for CPU-bound loading; more only for loading "
                        "that waits on I/O",
    "workers-slower": "fewer workers or bigger batches; with so little work per batch, num_workers=0 or 1 may be best",
    "loading-waits": "num_workers=2 or more (up to the usable cores, beyond them while loading waits on I/O)",
}
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = ("loading-waits and workers-vs-cores: arithmetic, {loaders}; workers-slower is a rate the machine's other "
           "work moves, so a general note (--all) only. {jobs}")
_found = finder(SCENARIO, FIXES)


def static(examined):
    setup = examined.setup
    if examined.workers <= setup.usable_cores:
        return []
    return [_found("note", "workers-vs-cores",
                   f"num_workers={examined.workers} on {setup.usable_cores} usable cores ({setup.cores_from}): the "
                   "workers and the training loop share those cores; more workers than cores pays off only while "
                   "loading waits on I/O rather than computing")]


def measured(examined, probe):
    iterate, compare = probe.first(events.ITERATE), probe.first(events.COMPARE)
    if not (iterate and compare and iterate.get("batches", 0) >= 2 and compare.get("batches", 0) >= 2):
        return []
    if examined.workers:
        if iterate.get("cpu_wait_share", 0) > BUSY_SHARE:
            return []  # the machine's other work, not the loader, set the pace: a rate says nothing
        return _with_workers(examined, compare, probe.all(events.BATCH))
    return _without_workers(iterate, compare)


def _with_workers(examined, compare, batches):
    # Steady rate after the first batch (which also pays for starting the workers); the probe's
    # own /proc readings between batches are taken out of the time.
    first, last = batches[0], batches[-1]
    spent = (last["seconds"] - last["measuring_s"]) - (first["seconds"] - first["measuring_s"])
    steady = spent / (len(batches) - 1) if len(batches) > 1 else None
    alone = compare["seconds"] / compare["batches"]
    # Twice as slow: a busy machine leaves the workers and the loop about one core between them, so a
    # batch from a worker costs its making plus its passing; twice the making shows passing costs more
    # (at 1.2, one core kept busy tripped it on 2 of 15 healthy public loaders).  Still a rate: over
    # 72 runs of the first 24 public loaders kept (tests/loaders/false_alarms.py) it tripped on none
    # quiet and on 2 with one core kept busy, far above one in a thousand, so it is a general note,
    # shown with --all only, until a measure the machine's load cannot move replaces the rate.
    if not (steady and steady > alone * 2 and alone > 0.002):
        return []
    return [_found("note", "workers-slower",
                   f"measured: {1 / steady:,.1f} batches/s with {examined.workers} workers after the first, "
                   f"{1 / alone:,.1f} batches/s with num_workers=0: sending each batch between processes costs "
                   "more than making it", general=True)]


def _without_workers(iterate, compare):
    alone = iterate["seconds"] / iterate["batches"]
    busy = iterate["cpu_seconds"] / iterate["seconds"] if iterate["seconds"] else 1.0
    with_workers = compare["seconds"] - compare.get("first_batch_s", 0)
    rate = (compare["batches"] - 1) / with_workers if with_workers > 0 and compare["batches"] > 1 else None
    if not (alone > 0.005 and (busy < 0.5 or (rate and rate > 1.5 / alone))):
        return []
    return [_found("risk", "loading-waits",
                   f"measured with num_workers=0: {alone * 1000:,.0f} ms per batch, the CPU busy {busy:.0%} of it"
                   + (f"; {compare['workers']} workers delivered {rate:,.1f} batches/s against {1 / alone:,.1f}"
                     if rate else "") + ". Without workers the training loop waits for every batch")]


def running(job):
    """The trainer inside the DataLoader, waiting for a batch, at most samples of the window."""
    waiting = sum(waits_for_data(s) for s in job.trainer_stacks)
    if not job.workers or len(job.trainer_stacks) < 3 or waiting * 3 < 2 * len(job.trainer_stacks):
        return []
    if len(stuck_workers(job)) == len(job.workers):
        return []  # not slow but stuck: scenario 01's finding
    if all(w.starved for w in job.workers):
        return []  # slow for want of cores the machine gives others: no reason of the loader's
    if len(idle_workers(job)) == len(job.workers):
        return []  # every worker waits for an index: no batch is being made (an epoch's turn, another loader)
    busy = sum(w.cpu_share for w in job.workers) / job.seconds
    if busy + job.trainer_cpu_s / job.seconds >= 0.8 * job.cores:
        return []  # the workers and the step compute on every core: more workers cannot help (21's pools?)
    return [_found("risk", "loading-waits",
                   f"the training process waited for a batch in {waiting} of {len(job.trainer_stacks)} samples of its "
                   f"stack over {job.seconds:.1f} s; its {len(job.workers)} workers used {busy:.1f} cores meanwhile"
                   + (" (they wait too: on I/O, a lock or a remote store)" if busy < 0.5 * len(job.workers) else ""))]


_read = text_finder(SCENARIO, FIXES, __doc__)
_SHARE = 0.5   # of the step or the profiled time: the loop waited for its batches more than it did anything else


def pasted(lines, raw):
    """A loop that waits for its batches (waits.loop_waits: a profile, printed data times, a wait told in words,
    a GPU told idle): 07's where the text speaks of a slow store, and where it cannot tell.  *likely* where the
    text also shows the loader has no workers, so that each read waits in turn; *possible* otherwise, with the
    question that decides between 07 and 28."""
    wait = waits.loop_waits(lines, _SHARE)
    # 28's, as its own rule says: no store named, and num_workers=0 shown or only a GPU told idle (its symptom).
    if wait is None or (not wait.storage and (wait.no_workers or wait.kind == "gpu")):
        return []
    if wait.kind != "gpu" and wait.no_workers:
        return [_read("likely", "loading-waits", wait.evidence, "the loader has no workers and the text speaks of a "
                      "slow store: each sample's read waits in the training process, one after another, while "
                      "workers would keep reads in flight as the step runs")]
    shown = f"the text shows num_workers={', '.join(map(str, sorted(wait.workers)))}; " if wait.workers else ""
    opening = "is it the loader the GPU waits for? " if wait.kind == "gpu" else "the step waits for its batches; "
    return [_read("possible", "loading-waits", wait.evidence, shown + opening + waits.WAITS_QUESTION)]
