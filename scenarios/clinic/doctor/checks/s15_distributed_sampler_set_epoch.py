"""15 · a DistributedSampler whose epoch the loop never sets repeats its order every epoch."""
from scenarios.clinic.doctor.findings import finder

SCENARIO = "15"
FIXES = {"distributed-set-epoch": "fixes/epoch_loop.py (for epoch in epochs(loader, n): it calls set_epoch); or "
                                  "call loader.sampler.set_epoch(epoch) at the start of every epoch, before iterating"}
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = "read from the sampler and the loop, no chance in it: {loaders}"
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
