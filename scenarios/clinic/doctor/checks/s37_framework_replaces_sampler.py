"""37 · Lightning replaced the DataLoader's sampler under DDP: a custom sampler is wrapped and its order shuffled.

With `use_distributed_sampler=True` (the Trainer's default) and more than one device, Lightning rebuilds
every DataLoader whose sampler is not a DistributedSampler: a RandomSampler or SequentialSampler becomes a
DistributedSampler, any other sampler goes into DistributedSamplerWrapper(sampler, shuffle=True) for the
training loader (lightning/pytorch/trainer/connectors/data_connector.py, _get_distributed_sampler), which
permutes the sampler's whole list before dealing every world-th index to each rank.  Texts: the errors
Lightning raises when it cannot wrap (a sampler without a finite __len__, a batch sampler that is not a
BatchSampler).  In the user's run: a rank's loader rebuilt around a custom sampler with shuffle=True.
"""
from scenarios.clinic.doctor.findings import finder

SCENARIO = "37"
_OWN_SPLIT = ("set Trainer(use_distributed_sampler=False) and make the sampler split itself by rank: give it "
              "self.trainer.global_rank and self.trainer.world_size in train_dataloader, and yield only this "
              "rank's share, whole batches where a batch's makeup matters (batch i to rank i % world_size)")
FIXES = {
    "sampler-wrapped-and-shuffled": _OWN_SPLIT + "; or make it a DistributedSampler subclass, which Lightning "
                                    "leaves alone",
    "sampler-cannot-be-wrapped": "give the sampler a finite __len__ (Lightning will wrap it, and shuffle its list: "
                                 "scenario 37), or " + _OWN_SPLIT,
}
# Lightning's own texts (lightning/fabric/utilities/distributed.py, _DatasetSamplerWrapper; lightning/pytorch/
# utilities/data.py, _dataloader_init_kwargs_resolve_sampler); pytorch_lightning prints the same.  Both are raised
# in the main process while the Trainer rebuilds the loader: no worker runs yet, no DataLoader frame is needed.
ERRORS = [(r"You seem to have configured a sampler in your DataLoader which does not provide (?:finite )?`__len__`"
           r"|Lightning can't inject a \(distributed\) sampler into your batch sampler"
           r"|Trying to inject a modified sampler into the batch sampler", "sampler-cannot-be-wrapped")]
# Samplers whose order carries nothing: a permutation of their draws is as good as their own order.
_ORDERLESS = {"WeightedRandomSampler", "SubsetRandomSampler", "RandomSampler"}
HEALTHY = ("the texts: errors only Lightning's sampler replacement raises. In your run (doctor -- COMMAND): a rank's "
           "DataLoader rebuilt with DistributedSamplerWrapper(shuffle=True) around a sampler of the user's own, read "
           "from the loader as it was built: no chance in it. Every Lightning DDP run with a custom sampler trips it, "
           "healthy or not: a wrapped WeightedRandomSampler or SubsetRandomSampler is left out, but a sampler of the "
           "user's own whose order carries nothing (a custom weighted draw) is named too, and its owner may ignore it; "
           "Fabric's setup_dataloaders wraps with shuffle=False and is not named. No recorded healthy run is a "
           "Lightning DDP job (tests/jobs, tests/loaders), so no rate is measured")
_found = finder(SCENARIO, FIXES)


def _wrapped(loaders: list, wrapper: dict) -> str:
    """The sampler the user's own loader had, in the same process, just before the wrapper's was built."""
    before = [loader for loader in loaders if loader.get("pid") == wrapper.get("pid")
              and (loader.get("lid") or 0) < (wrapper.get("lid") or 0)
              and loader.get("sampler") != "DistributedSamplerWrapper"]
    return max(before, key=lambda loader: loader.get("lid") or 0)["sampler"] if before else ""


def observed(run):
    """In the user's own run: a rank's DataLoader whose sampler is Lightning's DistributedSamplerWrapper with
    shuffle=True around a sampler of the user's own, and which delivered batches.  Read from the loader as
    built, no chance in it."""
    iterated = {(row.get("pid"), row.get("lid")) for row in run.get("per_epoch", []) if row.get("batches")}
    loaders = run.get("loaders", [])
    for loader in sorted(loaders, key=lambda loader: (loader.get("rank") is None, loader.get("rank") or 0)):
        if loader.get("sampler") != "DistributedSamplerWrapper" or not loader.get("shuffle") \
                or (loader.get("pid"), loader.get("lid")) not in iterated:
            continue
        inner = _wrapped(loaders, loader)
        if inner in _ORDERLESS:
            continue
        rank = loader.get("rank")
        who = f"rank {rank}" if rank is not None else "a training process"
        what = inner or "the DataLoader's sampler"
        return [_found("risk", "sampler-wrapped-and-shuffled",
                       f"measured in your run: {who}'s DataLoader was rebuilt with Lightning's "
                       f"DistributedSamplerWrapper(shuffle=True) around {what}: the sampler's list is permuted before "
                       "the ranks take their share, so its order (balanced batches, a curriculum, a grouping by "
                       "length) does not reach training_step",
                       figures={"rank": rank, "wrapped": inner or None})]
    return []
