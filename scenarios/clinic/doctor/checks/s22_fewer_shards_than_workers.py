"""22 · a streamed Hugging Face dataset with fewer shards than workers: the rest get nothing."""
import math

from scenarios.clinic.doctor.findings import finder

SCENARIO = "22"
FIXES = {
    "fewer-shards": "fixes/reshard_for_workers.py (reshard_for_workers(stream, num_workers) reshards to a multiple "
                    "of num_workers, or says why it cannot); or write the data as at least num_workers files",
}
# datasets' own log line (iterable_dataset.py), INFO/WARNING once per epoch from worker 0; older
# releases say n_shards.  Matched in logs by `explain`; it is a warning, not an exception.
LOG_TEXTS = [(r"Too many dataloader workers: \d+ \(max is dataset\.n?u?m?_?shards=\d+\)", "fewer-shards")]
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = "shards against workers, read from the dataset: {loaders}"
_found = finder(SCENARIO, FIXES)


def static(examined):
    dataset, workers = examined.loader.dataset, examined.workers
    if not workers or not (type(dataset).__module__ or "").startswith("datasets."):
        return []
    shards = getattr(dataset, "num_shards", None) or getattr(dataset, "n_shards", None)
    if not isinstance(shards, int) or shards % workers == 0:
        return []
    if shards < workers:
        return [_found("risk", "fewer-shards",
                       f"the streamed dataset has {shards} shard(s) for {workers} workers: datasets gives each worker "
                       f"whole shards, so {workers - shards} worker(s) get none and stop (\"Too many dataloader "
                       "workers\"), and the loader runs at most as fast as that many workers")]
    busiest = math.ceil(shards / workers)
    return [_found("note", "fewer-shards",
                   f"{shards} shards for {workers} workers: the busiest worker reads {busiest} shards while others "
                   f"read {shards // workers}, so the epoch runs at {shards / (busiest * workers):.0%} of what "
                   f"{workers} even workers would give")]
