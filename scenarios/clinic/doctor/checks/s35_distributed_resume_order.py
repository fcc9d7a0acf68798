"""35 · a resumed loader restored to its position but not to its epoch: it goes on in another epoch's order.

Static: a loader whose state_dict() is its resume (an Accelerate-prepared loader with use_stateful_dataloader,
or torchdata's StatefulDataLoader) over a sampler whose order is drawn from an epoch set from outside
(Accelerate's SeedableRandomSampler, a DistributedSampler that shuffles): the state holds how many batches
were taken, not the epoch, so a resumed process goes on in the order of whatever epoch its sampler holds
(read from the loader's and sampler's classes: no chance in it).  Text: Accelerate's own line as
load_state() restores a loader's state, printed by every resume, healthy ones too: possible, with the
question that decides.
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
           "healthy or not: possible at most, with the question. The watched run sees one launch, not the "
           "uninterrupted run to compare with: no rule on a run")
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
