"""14 · persistent workers keep the dataset copy they started with."""
from scenarios.clinic.doctor.findings import finder

SCENARIO = "14"
FIXES = {
    "persistent-epoch-state": "fixes/epoch_in_indices.py (EpochInIndices with EpochSampler); or "
                              "pass the epoch with each index (a Sampler yielding (index, epoch)), or share it (a "
                              "tensor after .share_memory_(), a multiprocessing.Value) and read it in __getitem__, "
                              "or persistent_workers=False",
}
_found = finder(SCENARIO, FIXES)


def static(examined):
    if not (examined.workers and examined.setup.persistent_workers):
        return []
    dataset = examined.loader.dataset
    named = [f"dataset.{n}" for n in getattr(dataset, "__dict__", {}) if "epoch" in n.lower()]
    named += [f"dataset.{n}()" for n in dir(type(dataset))
              if n.startswith("set_") and "epoch" in n and callable(getattr(type(dataset), n))]
    if not named:
        return []
    return [_found("risk", "persistent-epoch-state",
                   f"persistent_workers=True and the dataset has epoch-dependent state ({', '.join(named)}): the "
                   "workers keep the copy they got at the first epoch, so a change made in the main process "
                   "(dataset.set_epoch(e), a curriculum step) never reaches them")]
