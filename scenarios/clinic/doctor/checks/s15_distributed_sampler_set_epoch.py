"""15 · a DistributedSampler whose epoch the loop never sets repeats its order every epoch."""
from scenarios.clinic.doctor.findings import finder

SCENARIO = "15"
FIXES = {"distributed-set-epoch": "fixes/epoch_loop.py (for epoch in epochs(loader, n): it calls set_epoch); or "
                                  "call loader.sampler.set_epoch(epoch) at the start of every epoch, before iterating"}
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = ("read from the sampler and the loop, no chance in it: {loaders}. In your run (doctor -- COMMAND): the "
           "same order of 8 or more "
           "samples in two whole epochs of a shuffling DistributedSampler: chance repeats it once in 8! = 40,320 "
           "epochs at the least")
_found = finder(SCENARIO, FIXES)


def static(examined):
    from torch.utils.data.distributed import DistributedSampler

    loader = examined.loader
    sampler = loader.sampler if loader.batch_sampler is None else getattr(loader.batch_sampler, "sampler", None)
    if not (isinstance(sampler, DistributedSampler) and sampler.shuffle):
        return []
    return [_found("note", "distributed-set-epoch",
                   f"the sampler is a DistributedSampler (rank {sampler.rank} of {sampler.num_replicas}, shuffle=True, "
                   f"seed {sampler.seed}): it shuffles with seed + epoch, and its epoch is {sampler.epoch} until the "
                   "training loop calls set_epoch. The doctor cannot see the loop: check that it does")]


def observed(run):
    """In the user's own run: a shuffling DistributedSampler's loader delivered the same samples in the same
    order in two whole epochs.  A shuffle of a few dozen samples repeats its order by chance once in more
    permutations than any run draws: with 8 samples or more, a count with no chance in it."""
    epochs: dict[tuple, list] = {}
    for row in run.get("per_epoch", []):
        if row.get("sampler") == "DistributedSampler" and row.get("shuffle") and row.get("ended") \
                and row["distinct"] >= 8:
            epochs.setdefault((row["pid"], row["lid"]), []).append(row)
    for rows in epochs.values():
        repeats = [row for row in rows[1:] if row["order"] == rows[0]["order"]]
        if repeats:
            who = f"rank {rows[0]['rank']}" if rows[0].get("rank") is not None else "the training process"
            return [_found("risk", "distributed-set-epoch",
                           f"measured in your run: {who}'s DistributedSampler(shuffle=True) delivered the same "
                           f"{rows[0]['samples']} samples in the same order in epoch {rows[0]['epoch']} and in "
                           f"{len(repeats)} later epoch(s): set_epoch was never called",
                           figures={"rank": rows[0].get("rank"), "epochs_repeated": len(repeats),
                                    "samples": rows[0]["samples"]})]
    return []
