"""14 · persistent workers keep the dataset copy they started with."""
import re
from multiprocessing.sharedctypes import SynchronizedBase

from scenarios.clinic.doctor.findings import finder
from scenarios.clinic.doctor.holdings import installed_class

SCENARIO = "14"
FIXES = {
    "persistent-epoch-state": "fixes/epoch_in_indices.py (EpochInIndices with EpochSampler); or "
                              "pass the epoch with each index (a Sampler yielding (index, epoch)), or share it (a "
                              "tensor after .share_memory_(), a multiprocessing.Value) and read it in __getitem__, "
                              "or persistent_workers=False",
    "persistent-needs-workers": "persistent_workers=num_workers > 0 (debugging with num_workers=0 turns it off "
                                "too); scenario 14's README says why num_workers=0 hides what its workers do",
}
# dataloader.py's own check, met by a user who sets num_workers=0 to debug a loader with persistent
# workers: scenario 14's README shows it (three labellers of public logs named 14 for it).
ERRORS = [(r"persistent_workers option needs num_workers > 0", "persistent-needs-workers")]
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = ("read from the source and the setup, no chance in it: {loaders}. In your run (doctor -- COMMAND): a "
           "dataset state of the "
           "training process that no persistent worker's copy had when it made a batch, a count")
_found = finder(SCENARIO, FIXES)
# An epoch the training process counts (epoch, _epoch, cur_epoch, epoch_idx), not a setting that has
# "epoch" in its name (epoch_length, samples_per_epoch, num_epochs: unet3d's, a false risk once).
_EPOCH_COUNTER = re.compile(r"_*(?:current_|cur_|last_)?epoch(?:_?(?:idx|index|num|no|id|counter))?")


def _shared(value, depth: int = 2) -> bool:
    """Whether the workers read this value where the training process writes it: a multiprocessing
    Value or Array, a tensor in shared memory, or an object holding one (timm's SharedCount)."""
    if isinstance(value, SynchronizedBase):
        return True
    if type(value).__module__.startswith("torch") and callable(getattr(value, "is_shared", None)):
        return bool(value.is_shared())   # a tensor after .share_memory_() (torch is not imported here)
    return bool(depth) and any(_shared(v, depth - 1) for v in getattr(value, "__dict__", {}).values())


def static(examined):
    if not (examined.workers and examined.setup.persistent_workers):
        return []
    dataset = examined.loader.dataset
    epochs = {n: v for n, v in getattr(dataset, "__dict__", {}).items() if "epoch" in n.lower()}
    if epochs and all(_shared(v) for v in epochs.values()):
        return []   # the epoch lives in shared memory (timm's shared_epoch): set_epoch reaches the persistent workers
    named = [f"dataset.{n}" for n, v in epochs.items() if _EPOCH_COUNTER.fullmatch(n.lower()) and not _shared(v)]
    named += [f"dataset.{n}()" for n in dir(type(dataset))
              if n.startswith("set_") and "epoch" in n and callable(getattr(type(dataset), n))]
    named += [f"dataset.{n}() (writes {', '.join('dataset.' + a for a in written)})"
              for n, written in _setters(dataset).items() if "epoch" not in n]
    if not named:
        return []
    return [_found("risk", "persistent-epoch-state",
                   f"persistent_workers=True and the dataset has state the main process changes between epochs "
                   f"({', '.join(named)}): the workers keep the copy they got at the first epoch, so a change made "
                   "in the main process (dataset.set_epoch(e), a curriculum step) never reaches them")]


def _setters(dataset) -> dict[str, list[str]]:
    """The dataset's own set_* methods (its classes, not torch's or a library's) and the plain attributes each
    assigns: a curriculum's set_duration(), set_difficulty() change what __getitem__ reads, as set_epoch does.
    Read from the source, no chance in it: it names none of the 30 well-built public loaders."""
    import inspect
    import re

    found = {}
    for cls in type(dataset).__mro__:
        if installed_class(cls):  # torch's, a library's (datasets' set_format), Python's own
            continue
        for name, method in vars(cls).items():
            if name.startswith("set_") and inspect.isfunction(method) and name not in found:
                try:
                    source = inspect.getsource(method)
                except (OSError, TypeError):
                    continue
                written = sorted({a for a in re.findall(r"\bself\.(\w+)\s*=(?!=)", source)
                                  if not _shared(getattr(dataset, a, None))})
                if written:
                    found[name] = written
    return found


def observed(run):
    """In the user's own run: the training process's dataset moved to a state (an epoch, a curriculum step)
    that no worker's copy ever had while it made a batch: persistent workers kept their first copy."""
    stale = run.get("stale_dataset_states", 0)
    persistent = any(loader.get("persistent") for loader in run.get("loaders", []))
    if not (stale and persistent):
        return []
    return [_found("risk", "persistent-epoch-state",
                   f"measured in your run: the training process's dataset was in {stale} state(s) that no "
                   "persistent worker's copy had when it made its batches: the workers never saw the new epoch",
                   figures={"stale_states": stale})]
