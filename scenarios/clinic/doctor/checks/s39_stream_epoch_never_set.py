"""39 · a streamed dataset's shuffle never told the epoch repeats its order every epoch.

Static: the loader's dataset read as it is.  A `datasets` IterableDataset that shuffles draws its
shards' order and its buffer from its seed and its epoch (datasets/iterable_dataset.py,
_prepare_ex_iterable_for_iteration): a note with the epoch it holds, since only the loop can call
set_epoch.  A webdataset 1.0.2 pipeline has no set_epoch: a `shuffle` stage with a seed (a
WebDataset's shard shuffle always has one) draws the same order on every iteration, and a
`detshuffle` stage counts iterations in the process that runs it, a worker's copy that fresh
workers start again: a risk where no stage of the pipeline can change from one epoch to the next.
In the user's own run: a stream's loader delivered the same samples in the same order in two whole
epochs, a count with no chance in it for 8 samples or more.
"""
import re

from scenarios.clinic.doctor.findings import finder, text_finder

SCENARIO = "39"
FIXES = {
    "stream-set-epoch": "call set_epoch(epoch) before each epoch on the dataset the DataLoader reads "
                        "(loader.dataset.set_epoch(epoch)), not on the object it was made from: a .map()ed or "
                        "wrapped datasets IterableDataset has an epoch of its own. Lightning's fit loop sets the "
                        "sampler's epoch only: call it in on_train_epoch_start",
    "wds-same-order": "webdataset 1.0.2 has no set_epoch: build the shard and sample shuffles with detshuffle=True "
                      "and a wds.detshuffle stage, and keep the workers (persistent_workers=True), whose copies count "
                      "the epochs; or seed each epoch's pipeline with the epoch yourself",
}
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = ("read from the dataset, no chance in it: {loaders}. In your run (doctor -- COMMAND): the same order of 8 "
           "or more samples in two whole epochs of a stream's loader: a shuffling stream repeats it by chance once "
           "in 8! = 40,320 epochs at the least; judged only where the stream says it shuffles or holds an epoch of its "
           "own that stayed the same: a stream that does neither repeats it by design")
_found = finder(SCENARIO, FIXES)
_read = text_finder(SCENARIO, FIXES, __doc__)


def _hf_shuffle(dataset):
    """The buffer size of a datasets IterableDataset's shuffle, None where it does not shuffle."""
    if not type(dataset).__module__.startswith("datasets."):
        return None
    iterable, depth = getattr(dataset, "_ex_iterable", None), 0
    while iterable is not None and depth < 50:
        if type(iterable).__name__ == "BufferShuffledExamplesIterable":
            return getattr(iterable, "buffer_size", 0)
        iterable, depth = getattr(iterable, "ex_iterable", None), depth + 1
    return None


def _wds_shuffles(dataset) -> list[str]:
    """Each shuffle stage of a webdataset pipeline, as 'seeded' (the same order every iteration),
    'counted' (detshuffle: its count lives in whichever process iterates) or 'unseeded'."""
    kinds = []
    for stage in getattr(dataset, "pipeline", None) or []:
        name = type(stage).__name__
        if name == "detshuffle":
            kinds.append("counted")
        elif name == "FilterFunction" and getattr(getattr(stage, "f", None), "__name__", "") == "_shuffle":
            kinds.append("seeded" if getattr(stage, "kw", {}).get("seed") is not None else "unseeded")
    return kinds if type(dataset).__module__.startswith("webdataset") else []


def static(examined):
    loader = examined.loader
    dataset = getattr(loader, "dataset", None)
    buffer = _hf_shuffle(dataset)
    if buffer is not None:
        return [_found("note", "stream-set-epoch",
                       f"the dataset is a datasets IterableDataset that shuffles (buffer {buffer}) with its seed and "
                       f"its epoch, now {getattr(dataset, 'epoch', '?')}: the epoch changes only when the loop calls "
                       "set_epoch on this very object. The doctor cannot see the loop: check that it does")]
    kinds = _wds_shuffles(dataset)
    fresh = examined.workers > 0 and not getattr(loader, "persistent_workers", False)
    repeating = [k for k in kinds if k == "seeded" or (k == "counted" and fresh)]
    if not kinds or not repeating:
        return []
    every = len(repeating) == len(kinds)
    counted = " (detshuffle counts in each worker's copy, and these workers are new every epoch)" \
        if "counted" in repeating else ""
    return [_found("risk" if every else "note", "wds-same-order",
                   f"the dataset is a webdataset pipeline with {len(kinds)} shuffle stage(s), {len(repeating)} of them "
                   f"drawing the same order on every epoch{counted}: "
                   + ("the whole order repeats each epoch" if every else "the shards' order repeats each epoch; the "
                      "unseeded sample shuffle (seeded from the clock) hides it within its buffer"))]


def _repeated(rows: list[dict]) -> list[dict]:
    """The epochs that delivered an earlier epoch's order; for a stream that does not say it shuffles, only those
    whose own epoch (the stream's `epoch` as the training process held it) was the earlier epoch's too."""
    return [row for k, row in enumerate(rows)
            if any(row["order"] == e["order"]
                   and (row.get("stream_shuffles") or row.get("stream_epoch") == e.get("stream_epoch"))
                   for e in rows[:k])]


def observed(run):
    """In the user's own run: a stream's loader delivered the same samples in the same order in two whole
    epochs, where the stream says it shuffles (a Hugging Face IterableDataset after shuffle()) or holds an epoch
    of its own that stayed the same in the training process (a hand-written stream that advances it in each
    worker's copy, which fresh workers start again).  A shuffle of 8 samples or more repeats its order by chance
    once in 8! epochs at the least: a count with no chance in it.  A stream that neither shuffles nor holds an
    epoch repeats by design, and is not judged."""
    epochs: dict[tuple, list] = {}
    for row in run.get("per_epoch", []):
        if row.get("iterable") and (row.get("stream_shuffles") or row.get("stream_epoch") is not None) \
                and row.get("ended") and row.get("distinct", 0) >= 8:
            epochs.setdefault((row["pid"], row["lid"]), []).append(row)
    for rows in epochs.values():
        repeats = _repeated(rows)
        if repeats:
            who = f"rank {rows[0]['rank']}'s" if rows[0].get("rank") is not None else "the"
            held = "" if rows[0].get("stream_shuffles") else \
                f" (the stream's own epoch stayed {rows[0]['stream_epoch']} in the training process)"
            return [_found("risk", "stream-set-epoch",
                           f"measured in your run: {who} stream loader ({rows[0]['workers']} workers) delivered the "
                           f"same {rows[0]['samples']} samples in the same order in {len(repeats)} of its "
                           f"{len(rows) - 1} later epochs{held}: its shuffle never heard the epoch",
                           figures={"rank": rows[0].get("rank"), "epochs_repeated": len(repeats),
                                    "samples": rows[0]["samples"], "workers": rows[0]["workers"]})]
    return []


# Printed output (explain): lines naming an epoch and printing a list of whole numbers (a batch's ids).
_EPOCH = re.compile(r"\bepoch\s*[:=]?\s*(\d+)\b", re.I)
_IDS = re.compile(r"\[\s*(\d+(?:\s*,\s*\d+)+)\s*\]")
_STREAM = re.compile(r"IterableDataset|webdataset|\bwds\.|[Ss]treaming|shuffle_buffer|buffer_size|\bshards?\b")
_RANK = re.compile(r"\brank\s*[:=]?\s*\d", re.I)  # a rank's lines are 15's and 29's to read


def pasted(lines, raw):
    """The same list of 4 or more ids printed for two or more epochs under the same label: the same order every
    epoch.  Likely where the log speaks of a stream; else possible, with 15's question.  Lines of a rank are
    left to 15 and 29."""
    printed: dict[str, dict[int, tuple]] = {}
    for line in raw:
        epoch, ids = _EPOCH.search(line), _IDS.findall(line)
        if epoch and ids and not _RANK.search(line):
            numbers = tuple(int(n) for n in re.findall(r"\d+", ids[0]))
            label = _IDS.sub("[]", _EPOCH.sub("epoch", line)).strip()
            if len(numbers) >= 4:
                printed.setdefault(label, {}).setdefault(int(epoch[1]), numbers)
    for label, by_epoch in printed.items():
        same = [e for e in sorted(by_epoch) if list(by_epoch.values()).count(by_epoch[e]) > 1]
        if len(same) < 2:
            continue
        evidence = f"epochs {', '.join(map(str, same))} printed the same {len(by_epoch[same[0]])} ids in the same order"
        if _STREAM.search("\n".join(raw)):
            return [_read("likely", "stream-set-epoch", evidence, "the log speaks of a stream: its shuffle draws from "
                          "its seed and an epoch that set_epoch never changed")]
        return [_read("possible", "stream-set-epoch", evidence, "is the dataset a stream (an IterableDataset, "
                      "streaming=True, webdataset)? Then its set_epoch is never called (39); with a DistributedSampler "
                      "it is the sampler's (15)")]
    return []
