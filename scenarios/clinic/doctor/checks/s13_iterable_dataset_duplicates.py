"""13 · an IterableDataset replayed in full by every worker unless it splits itself.

Static: the code a worker runs (the dataset's classes, worker_init_fn, and the helpers they
call, such as webdataset's split_by_worker) never asks get_worker_info(): a certainty that no
measurement downgrades.  Measured: samples counted, not batches (a shuffle in each worker makes
duplicated samples rarely form identical batches).  Confirmed when both passes reach the end of
the epoch and the workers delivered exactly num_workers times the samples of num_workers=0: a
count, with no chance in it.  Where the epoch is too long to finish, confirmed when at least a
quarter of the samples the workers delivered (and at least 8) are repeats while the same number
read with num_workers=0 holds none.
"""
from scenarios.clinic.doctor import events
from scenarios.clinic.doctor.findings import finder
from scenarios.clinic.doctor.holdings import code_sources

SCENARIO = "13"
_SPLIT_FIX = ("split the stream by worker in __iter__: info = torch.utils.data.get_worker_info(); take every "
             "info.num_workers-th item starting at info.id (or shard the files by worker)")
FIXES = {"iterable-worker-split": _SPLIT_FIX, "duplicate-samples": _SPLIT_FIX}
_found = finder(SCENARIO, FIXES)


def static(examined):
    if examined.workers < 2 or not examined.setup.iterable:
        return []
    sources, unreadable = code_sources(examined.loader)
    if any("get_worker_info" in s for s in sources):
        return []
    return [_found("note" if unreadable else "risk", "iterable-worker-split",
                   f"{examined.setup.dataset} is an IterableDataset whose code never calls get_worker_info()"
                   + (" (part of its source is unavailable)" if unreadable else "")
                   + f": each of the {examined.workers} workers iterates the whole stream, so every sample arrives "
                   f"{examined.workers} times per epoch")]


def _repeats(hashes: list) -> int:
    return len(hashes) - len(set(hashes))


def measured(examined, probe):
    iterate, compare = probe.first(events.ITERATE), probe.first(events.COMPARE)
    workers = examined.workers
    if not (examined.setup.iterable and iterate and compare and workers > 1):
        return []
    mine, alone = iterate.get("samples", 0), compare.get("samples", 0)
    if iterate.get("ended") and compare.get("ended") and alone:
        if mine == workers * alone:
            return [_found("risk", "duplicate-samples",
                           f"measured: the {workers} workers delivered {mine:,} samples in one epoch, num_workers=0 "
                           f"delivered {alone:,}; {_repeats(iterate.get('sample_hashes', [])):,} of them were exact "
                           "copies of another: each worker replays the whole stream")]
        return []
    seen = iterate.get("sample_hashes", [])
    baseline = compare.get("sample_hashes", [])[:len(seen)]
    repeated = _repeats(seen)
    if len(baseline) == len(seen) and repeated >= max(8, len(seen) // 4) and _repeats(baseline) == 0:
        return [_found("risk", "duplicate-samples",
                       f"measured: {repeated} of the first {len(seen)} samples the workers delivered were exact copies "
                       "of another "
                       f"(none among {len(baseline)} read with num_workers=0): the workers replay the same stream")]
    return []


def merge(findings, probe):
    """A static certainty stays a risk; the count, where it confirms, joins it as evidence."""
    static_ones = [f for f in findings if f.check == "iterable-worker-split"]
    counted = [f for f in findings if f.check == "duplicate-samples"]
    if static_ones and counted:
        static_ones[0].level = "risk"
        static_ones[0].evidence += f"; {counted[0].evidence}"
        return static_ones
    return findings
