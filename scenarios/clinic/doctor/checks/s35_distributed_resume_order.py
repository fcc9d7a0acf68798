"""35 · a resumed loader restored to its position but not to its epoch: it goes on in another epoch's order.

Static: a loader whose state_dict() is its resume (an Accelerate-prepared loader with use_stateful_dataloader,
or torchdata's StatefulDataLoader) over a sampler whose order is drawn from an epoch set from outside
(Accelerate's SeedableRandomSampler, a DistributedSampler that shuffles): the state holds how many batches
were taken, not the epoch, so a resumed process goes on in the order of whatever epoch its sampler holds
(read from the loader's and sampler's classes: no chance in it).  Text: Accelerate's own line as
load_state() restores a loader's state, printed by every resume, healthy ones too: possible, with the
question that decides.  In the user's own run, where the command is a resume test of ranks (each rank's
process cut inside an epoch, then launched again): the order each rank's resumed loader asked its workers
for against the interrupted epoch's (run/resumes.py), a count.  A reference run that ended, with a resume
from one of its checkpoints, shows no interrupted epoch to compare with, and is not judged.
"""
from scenarios.clinic.doctor.findings import finder

SCENARIO = "35"
_FIX = ("set the sampler's epoch before the resumed iterator is made: keep the epoch (or the step) in the "
        "checkpoint and call loader.set_epoch(epoch) (Accelerate) or sampler.set_epoch(epoch) (DistributedSampler) "
        "before iterating, as at every epoch's start (scenario 35's fixed.py)")
FIXES = {"epoch-not-in-state": _FIX, "resumed-loader-state": _FIX}
# accelerate 1.15.0 (checkpointing.py, load_accelerator_state) logs this at INFO once it has given every
# prepared loader its saved state: every resume prints it, right or wrong, so only the question decides.
LOG_TEXTS = [(r"All dataloader sampler states loaded successfully", "resumed-loader-state")]
ASK = [(r"All dataloader sampler states loaded successfully",
        "did the job resume in an epoch after the first, with shuffling? Accelerate's state holds the loader's "
        "position, not its epoch: unless the loop calls loader.set_epoch(epoch) before iterating, the resumed "
        "processes go on in epoch 0's order (compare a resumed step's sample ids with an uninterrupted run's)")]
# How often healthy loaders and jobs trip each rule (scenarios/HEALTHY.md).
HEALTHY = ("static: the loader's and its sampler's classes, read, no chance in it; it names every resumable loader "
           "over an epoch-seeded sampler, as a note, since whether the loop sets the epoch before a resumed iterator "
           "is outside the loader. Text: Accelerate's own, printed by every load_state() of a stateful loader, "
           "healthy or not: possible at most, with the question. In your run (doctor -- COMMAND), where the command "
           "is a resume test (each rank cut inside an epoch, then launched again): the order each rank's resumed "
           "loader asked for against the interrupted epoch's, the loaders' own record, a count with no chance in it")
FIXES["resumed-in-another-order"] = _FIX
_found = finder(SCENARIO, FIXES)


def _sampler(loader):
    """The sampler that draws the order, below Accelerate's and torch's batch samplers."""
    seen = loader.batch_sampler if getattr(loader, "batch_sampler", None) is not None else loader.sampler
    for _ in range(3):  # BatchSamplerShard -> BatchSampler -> sampler
        inner = getattr(seen, "batch_sampler", None) or getattr(seen, "sampler", None)
        if inner is None:
            return seen
        seen = inner
    return seen


def static(examined):
    loader = examined.loader
    kind = type(loader)  # type(): an Accelerate loader reports its base loader's class through __class__
    accelerate = kind.__module__.startswith("accelerate.") and getattr(loader, "use_stateful_dataloader", False)
    if not (accelerate or kind.__module__.startswith("torchdata.stateful_dataloader")):
        return []
    sampler = _sampler(loader)
    name = type(sampler).__name__
    epoch_seeded = name == "SeedableRandomSampler" or (name == "DistributedSampler" and getattr(sampler, "shuffle", 0))
    if not epoch_seeded:
        return []
    return [_found("note", "epoch-not-in-state",
                   f"a resumable loader ({kind.__name__}) over a {name} that draws each epoch's order from its "
                   "epoch: the loader's state_dict() holds how many batches were taken, not the epoch, so a process "
                   "resumed in a later epoch goes on from the right batch of epoch 0's order unless the loop sets "
                   "the epoch before iterating (samples twice in that epoch, others never)")]


def observed(run):
    """In the user's own run (a resume test of ranks: the job cut inside an epoch, then launched again): a rank's
    process that started after its interrupted one asked its workers for another order than the interrupted
    epoch's, from where it took the epoch up.  The loaders' own record, a count with no chance in it."""
    lost = [row for row in run.get("resumed_orders", []) if row.get("rank") is not None and row.get("order_lost")]
    if not lost:
        return []
    row = lost[0]
    where = f"from batch {row['differ_at']} on" if row["differ_at"] is not None else "in the epoch"
    return [_found("risk", "resumed-in-another-order",
                   f"measured in your run: {len(lost)} rank(s) resumed their interrupted epoch in another order: rank "
                   f"{row['rank']}'s resumed process asked {where} for {row['asked']}… where the interrupted one had "
                   f"asked for {row['was'] or 'nothing yet'}…; across the two, {row['twice']} samples were asked for "
                   f"twice and {row['never']} never on that rank (the DataLoaders' own record)",
                   figures={"ranks": len(lost), **{k: row[k] for k in ("rank", "differ_at", "twice", "never")}})]
