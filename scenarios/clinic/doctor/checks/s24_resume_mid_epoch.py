"""24 · a job resumed from a mid-epoch checkpoint: the epoch restarts in a new order, silently."""
from scenarios.clinic.doctor.findings import finder

SCENARIO = "24"
_LONG_EPOCH = 1_000   # batches: an epoch long enough that jobs checkpoint (and get preempted) inside it
FIXES = {
    "resume-mid-epoch": "torchdata's StatefulDataLoader: save loader.state_dict() in the checkpoint and "
                        "load_state_dict() it on resume (scenario 24's fixed.py); a step count alone does not "
                        "bring back the order",
    "stateful-out-of-order": "in_order=True (the default) where the loader's state is checkpointed",
}
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = "read from the loader's classes, no chance in it: {loaders}"
_found = finder(SCENARIO, FIXES)


def static(examined):
    from torch.utils.data import RandomSampler

    loader, batches = examined.loader, examined.setup.batches
    if hasattr(loader, "state_dict") and hasattr(loader, "load_state_dict"):
        if examined.workers and getattr(loader, "in_order", True) is False:
            return [_found("risk", "stateful-out-of-order",
                           "a StatefulDataLoader with in_order=False and workers: torchdata does not guarantee that "
                           "its state_dict resumes where it stopped")]
        return []
    sampler = loader.sampler if loader.batch_sampler is None else getattr(loader.batch_sampler, "sampler", None)
    if not isinstance(sampler, RandomSampler) or not batches or batches < _LONG_EPOCH:
        return []
    return [_found("note", "resume-mid-epoch",
                   f"a plain DataLoader that shuffles, {batches:,} batches per epoch: a job that checkpoints inside "
                   "an epoch and resumes starts that epoch again in a new order (samples twice, others never); "
                   "its place in the epoch is nowhere in the checkpoint")]


def observed(run):
    """In the user's own run (a resume test: the job cut inside an epoch, then started again): the process that
    started after the interrupted one asked its workers for another order than the interrupted epoch's, from
    where it took up the epoch.  The loaders' own record of the indices asked for, a count with no chance in it.
    A job of ranks is 35's."""
    for row in run.get("resumed_orders", []):
        if row.get("rank") is None and row.get("order_lost"):
            return [_found("risk", "resume-mid-epoch", f"measured in your run: process {row['interrupted']} stopped "
                           f"inside an epoch and process {row['resumed']} {_took_up(row)} (the DataLoaders' own "
                           "record of the indices they asked their workers for)",
                           figures={k: row[k] for k in ("interrupted", "resumed", "differ_at", "twice", "never")})]
    return []


def _took_up(row: dict) -> str:
    """How the resumed loader took the epoch up: from its start again (a loop that skips batches by itself), or
    from where it stopped in another order."""
    if row["skipped"] <= 0:
        return (f"started it again from its first batch in another order (batch 0: {row['asked']}…, the interrupted "
                f"epoch's: {row['was'] or 'none'}…): whatever the loop skips, the batches before the checkpoint and "
                "after it are not one epoch")
    if row["differ_at"] is None:
        return f"took it up at batch {row['skipped']}, and {row['twice']} samples came twice and {row['never']} never"
    return (f"took it up at batch {row['skipped']} in another order ({row['asked']}… where the interrupted one had "
            f"asked for {row['was'] or 'nothing yet'}…): {row['twice']} samples of the epoch asked for twice and "
            f"{row['never']} never")
