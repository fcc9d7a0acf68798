"""38 · a shuffle buffer fed one shard at a time: over shards sorted by source, a batch holds one or two sources.

Static: the stream read as it is built.  A webdataset pipeline whose `shuffle` stage comes after the
stage that reads tar files, from a shard list read one shard after another (no wds.RandomMix or
RoundRobin at its head), buffers N samples of the shard or two it read last; a Hugging Face
IterableDataset whose BufferShuffledExamplesIterable is fed by one shard at a time while the stream has
several (max_buffer_input_shards=1, or take()/skip() before shuffle(), which fix the shard order:
datasets/iterable_dataset.py, IterableDataset.shuffle).  Either mixes well only where every shard is
already a mixture; the doctor cannot see what the shards hold, so it says this as a general note
(--all), never as a risk.  Pasted output: lines that print each batch's labels or sources, most of them
a single value repeated: *possible*, with the question that decides.  No observed hook: the run-watching
doctor sees samples by their bytes, not their labels or where they were read from.
"""
import re

from scenarios.clinic.doctor.findings import finder, text_finder

SCENARIO = "38"
_MIX = ("read the sources or shards at once and mix them sample by sample before the buffer: webdataset: one "
        "stream per source mixed by wds.RandomMix(streams, longest=True), then wds.shuffle(n); Hugging Face "
        "datasets: interleave_datasets(per_source_streams, seed=…, stopping_strategy=\"all_exhausted_without_"
        "replacement\"), or shuffle(seed=…, buffer_size=…) with its default max_buffer_input_shards and no "
        "take()/skip() before it. Best of all, write shards that are already mixed. A buffer as large as a "
        "worker's data mixes too, by holding all of it")
FIXES = {"buffer-fed-one-shard": _MIX,
         "batches-of-one-label": _MIX,
         "shards-in-file-order": "give the shard shuffle a number: wds.WebDataset(urls, shardshuffle=100) (or "
                                 "False on purpose for evaluation); with shards written one source after another, "
                                 "also mix the sources sample by sample (scenario 38)"}
# webdataset's own warning (webdataset/compat.py, WebDataset.__init__): its shards are read in the listed order.
LOG_TEXTS = [(r"WebDataset\(shardshuffle=\.\.\.\) is None; set explicitly to False or a number",
              "shards-in-file-order")]
HEALTHY = ("read from how the stream is built, no chance in it, and a general note only (--all): {loaders}. In a "
           "pasted log: 4 or more printed lists of 8 or more labels, at least half of them one value repeated, with "
           "2 or more values across them; 4 batches of 8 drawn at random from 2 balanced labels do that about once in "
           "5,600 logs (6 (1/128)^2 / 2), more batches or more labels far less often")
_found = finder(SCENARIO, FIXES)
_read = text_finder(SCENARIO, FIXES, __doc__)
_TAR_STAGES = {"tarfile_samples", "tarfile_to_samples", "tar_file_expander", "group_by_keys", "_tarfile_samples"}
_MIXERS = {"RandomMix", "RoundRobin"}


def _stage_name(stage) -> str:
    name = type(stage).__name__
    return getattr(getattr(stage, "f", None), "__name__", "") or name if name == "FilterFunction" else name


def _wds_buffer(dataset) -> int | None:
    """The buffer of a webdataset pipeline's sample shuffle fed one shard at a time, None where it has none."""
    if not (type(dataset).__module__ or "").startswith("webdataset"):
        return None
    stages = list(getattr(dataset, "pipeline", None) or [])
    if not stages or type(stages[0]).__name__ in _MIXERS:
        return None
    names = [_stage_name(s) for s in stages]
    read = next((i for i, name in enumerate(names) if name in _TAR_STAGES), None)
    if read is None:
        return None
    for stage, name in zip(stages[read + 1:], names[read + 1:]):
        if name == "_shuffle":
            args, kw = getattr(stage, "args", ()), getattr(stage, "kw", {})
            return int(args[0] if args else kw.get("bufsize", 1000))
    return None


def _hf_buffer(dataset) -> tuple[int, int] | None:
    """(buffer_size, shards) of a datasets stream whose buffer is fed one shard at a time, None otherwise."""
    if not (type(dataset).__module__ or "").startswith("datasets."):
        return None
    iterable, depth = getattr(dataset, "_ex_iterable", None), 0
    while iterable is not None and depth < 50:
        if type(iterable).__name__ == "BufferShuffledExamplesIterable":
            inner = getattr(iterable, "ex_iterable", None)
            if type(inner).__name__ == "InterleavedShardsExamplesIterable" or getattr(inner, "num_shards", 1) < 2:
                return None
            return getattr(iterable, "buffer_size", 0), inner.num_shards
        iterable, depth = getattr(iterable, "ex_iterable", None), depth + 1
    return None


def static(examined):
    if not examined.setup.iterable:
        return []
    dataset = examined.loader.dataset
    wds_buffer, hf = _wds_buffer(dataset), _hf_buffer(dataset)
    if wds_buffer is not None:
        return [_found("note", "buffer-fed-one-shard",
                       f"a webdataset pipeline shuffles samples in a buffer of {wds_buffer:,} fed by one shard after "
                       "another: where a shard holds one source or label, each batch holds the one or two it read "
                       "last", general=True)]
    if hf is not None:
        return [_found("note", "buffer-fed-one-shard",
                       f"a streamed datasets IterableDataset of {hf[1]} shards shuffles in a buffer of {hf[0]:,} rows "
                       "fed by one shard at a time (max_buffer_input_shards=1, or take()/skip() before shuffle()): "
                       "where a shard holds one source or label, each batch holds the one or two it read last",
                       general=True)]
    return []


# A printed list of 8 or more labels: "[3, 3, 3, 3, 3, 3, 3, 3]", "tensor([1, 1, …])", "['code', 'code', …]".
_LIST = re.compile(r"\[\s*((?:'[^']*'|\"[^\"]*\"|-?\d+)(?:\s*,\s*(?:'[^']*'|\"[^\"]*\"|-?\d+)){7,})\s*\]")
_WORDS = re.compile(r"\b(labels?|sources?|classes|class|domains?|targets?|datasets?)\b", re.I)


def pasted(lines, raw):
    """Lines that print each batch's labels or sources, half of them or more one value repeated."""
    lists = []
    for line in raw:
        found = _LIST.search(line)
        if found and _WORDS.search(line):
            lists.append([v.strip().strip("'\"") for v in found[1].split(",")])
    single = [values for values in lists if len(set(values)) == 1]
    if len(lists) < 4 or len(single) * 2 < len(lists) or len({v[0] for v in single}) < 2:
        return []
    evidence = (f"{len(single)} of {len(lists)} printed lists of labels hold one value repeated "
                f"({', '.join(sorted({v[0] for v in single})[:4])}), each of {min(map(len, single))} or more")
    return [_read("possible", "batches-of-one-label", evidence,
                  "are these each batch's labels or sources, from a stream shuffled in a buffer (webdataset "
                  "`.shuffle(n)`, datasets `shuffle(buffer_size=…)`)? Then the buffer holds one shard or two at a "
                  "time and the shards are sorted (38); from a map-style dataset, look at its sampler instead")]
