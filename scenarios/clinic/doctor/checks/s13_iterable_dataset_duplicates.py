"""13 · an IterableDataset replayed in full by every worker unless it splits itself.

Where the work is split is judged where it happens: the probe counts each worker's samples (torch's
own record of which worker sent each batch) and the samples two workers both delivered.
Static: the code a worker runs (the dataset's classes, worker_init_fn, and the helpers they
call, such as webdataset's split_by_worker) never asks get_worker_info(): a certainty that no
measurement downgrades.  Measured: samples counted, not batches (a shuffle in each worker makes
duplicated samples rarely form identical batches).  Confirmed when both passes reach the end of
the epoch and the workers delivered exactly num_workers times the samples of num_workers=0: a
count, with no chance in it.  Where the epoch is too long to finish, confirmed when at least a
quarter of the samples the workers delivered (and at least 8) are repeats while the same number
read with num_workers=0 holds none.
"""
from scenarios.clinic.doctor import events, printed
from scenarios.clinic.doctor.findings import finder, text_finder
from scenarios.clinic.doctor.holdings import code_sources

SCENARIO = "13"
_SPLIT_FIX = ("fixes/shard_by_worker.py (ShardByWorker, or worker_share(items) in __iter__); or "
             "split the stream by worker in __iter__: info = torch.utils.data.get_worker_info(); take every "
             "info.num_workers-th item starting at info.id (or shard the files by worker)")
FIXES = {"iterable-worker-split": _SPLIT_FIX, "duplicate-samples": _SPLIT_FIX}
# torch/utils/data/dataloader.py warns so when the workers fetch more samples than len() said: each one
# iterated the whole dataset.
LOG_TEXTS = [(r"Length of IterableDataset [^\n]{0,300}? was reported to be \d+", "duplicate-samples")]
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = ("static: the split read from the code, no chance in it. measured: samples two workers both sent, against "
           "a bound of at least 8, {repeats}; {loaders}. In your run (doctor -- COMMAND): a stream's epoch of 8 or "
           "more distinct samples "
           "delivered twice over or more, a count with no chance in it")
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


def _split_seen(iterate: dict) -> str:
    counts = iterate.get("per_worker") or {}
    return (f" (per worker: {', '.join(f'{w}: {n}' for w, n in sorted(counts.items()))}; "
            f"{iterate.get('across_workers', 0)} delivered by more than one worker)") if counts else ""


def _repeat_bound(seen: list) -> int:
    """How many samples two workers must both deliver to be a replayed stream, not chance."""
    return max(8, len(seen) // 4)


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
                           "copies of another: each worker replays the whole stream" + _split_seen(iterate))]
        return []
    seen = iterate.get("sample_hashes", [])
    baseline = compare.get("sample_hashes", [])[:len(seen)]
    # The fault itself: one sample delivered by two workers (counted per worker where torch says
    # which worker sent a batch; else any repeat), while num_workers=0 repeats nothing.
    repeated = iterate.get("across_workers", _repeats(seen))
    if len(baseline) == len(seen) and repeated >= _repeat_bound(seen) and _repeats(baseline) == 0:
        return [_found("risk", "duplicate-samples",
                       f"measured: {repeated} of the first {len(seen)} samples the workers delivered were exact copies "
                       "of another "
                       f"(none among {len(baseline)} read with num_workers=0): the workers replay the same stream"
                       + _split_seen(iterate))]
    return []


def _split_measured(probe) -> str:
    """'split' where the probe read a whole epoch both ways and the workers delivered it once; 'unsure'
    where it read part of a stream and no worker repeated another; '' where it did not read it."""
    iterate, compare = (probe.first(events.ITERATE), probe.first(events.COMPARE)) if probe is not None else (0, 0)
    if not (iterate and compare and iterate.get("samples")):
        return ""
    if iterate.get("ended") and compare.get("ended") and iterate.get("samples") == compare.get("samples"):
        return "split"
    return "unsure" if not iterate.get("across_workers", _repeats(iterate.get("sample_hashes", []))) else ""


def merge(findings, probe):
    """Where the work is split is seen where it happens, not in one class's source: a count that
    confirms makes the static reading a risk; a whole epoch delivered once by the workers (split
    through a helper, a base class or a library) drops it; part of a stream without a repeat
    leaves it a note."""
    static_ones = [f for f in findings if f.check == "iterable-worker-split"]
    counted = [f for f in findings if f.check == "duplicate-samples"]
    if static_ones and counted:
        static_ones[0].level = "risk"
        static_ones[0].evidence += f"; {counted[0].evidence}"
        return static_ones
    seen = _split_measured(probe) if static_ones else ""
    if seen == "split":
        return []
    if seen == "unsure":
        for finding in static_ones:
            finding.level = "note"
            finding.evidence += ("; the probe read part of the stream and no worker delivered a sample another did: "
                                 "the split may be made where this reading cannot see")
    return findings


def observed(run):
    """In the user's own run: a stream's epoch delivered the same samples again, as each worker yields
    every record.  A count: a split stream delivers each record once, and repeats of at least a quarter
    of its distinct samples (8 or more) are no handful of identical records; an epoch cut short by the
    run's end (a Trainer's max_steps) shows them as well as a whole one."""
    found = []
    for row in run.get("per_epoch", []):
        if not (row.get("iterable") and row.get("workers", 0) > 1 and row["distinct"] >= 8):
            continue
        repeats = row["samples"] - row["distinct"]
        if repeats >= 8 and repeats >= row["distinct"] / 4:
            who = f"rank {row['rank']}'s" if row.get("rank") is not None else "the"
            found.append(_found("risk", "duplicate-samples",
                                f"measured in your run: {who} stream loader (epoch {row['epoch']}, "
                                f"{row['workers']} workers) delivered {row['samples']:,} samples of which "
                                f"{row['distinct']:,} distinct ({repeats:,} arrived again): each worker yields "
                                "every record",
                                figures={key: row[key] for key in ("epoch", "rank", "workers", "samples", "distinct")}))
            break
    return found


_read = text_finder(SCENARIO, FIXES, __doc__)


def pasted(lines, raw):
    """Printed batches of a dataset's indices holding every index the same k >= 2 times: k copies of the
    dataset, as an IterableDataset each worker iterates whole gives.  Likely where the batches are one printed
    list, list(loader): one epoch; else k epochs print the same."""
    batches, counts = printed.dataset_indices(lines)
    times = set(counts.values())
    if len(times) != 1 or min(times) < 2:
        return []
    k = times.pop()
    evidence = f"{batches} printed batches hold each of {len(counts)} indices {k} times"
    if printed.one_printed_list(lines):
        return [_read("likely", "duplicate-samples", evidence,
                      f"one printed list of batches, one epoch: every sample came {k} times, as an "
                      f"IterableDataset that each of {k} workers iterates whole delivers it")]
    return [_read("possible", "duplicate-samples", evidence,
                  f"is this one epoch? Then every sample came {k} times: an IterableDataset that each of {k} "
                  f"workers iterates whole (13); {k} epochs print the same")]
