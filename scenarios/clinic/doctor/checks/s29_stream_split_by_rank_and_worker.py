"""29 · a sharded stream split by worker but not by rank: every rank trains on the same samples.

A stream (IterableDataset) has no sampler for DistributedSampler to replace: only its own code splits
it between ranks.  Static: the split read from the stream itself: a webdataset pipeline's stages
(split_by_node, or WebDataset's default single_node_only, which raises on a second rank), a Hugging
Face stream's split_dataset_by_node, else the code a worker runs asking for a rank at all.
Measured (the probe's ranks stage, probe_ranks.py): the loader built and read again as rank 0 and as
rank 1 of 2, with the environment torchrun gives each rank; the same samples on both is the fault,
and a rank that raises webdataset's ValueError is its loud form.  A count, with no chance in it:
finite streams read to their end must deliver the same set, a longer stream the same samples in the
same order.  A risk where this process is itself one of several ranks (WORLD_SIZE, or an initialized
process group), or where the stream's own code asks for a rank (it is made to run as ranks);
elsewhere the doctor cannot know the job has ranks, and says it as a note.  A word in the code
(RANK, get_rank) never silences what the two ranks' reading measured.
"""
import os
import re

from scenarios.clinic.doctor import events
from scenarios.clinic.doctor.findings import finder, text_finder
from scenarios.clinic.doctor.holdings import code_sources

SCENARIO = "29"
_SPLIT = ("split the shards by rank before you split them by worker: webdataset: wds.split_by_node then "
          "wds.split_by_worker in the pipeline (or WebDataset(urls, nodesplitter=wds.split_by_node)); Hugging "
          "Face datasets: datasets.distributed.split_dataset_by_node(stream, rank=RANK, world_size=WORLD_SIZE); "
          "your own IterableDataset: every WORLD_SIZE-th shard from RANK, then every num_workers-th of those "
          "from get_worker_info().id")
FIXES = {"stream-not-split-by-rank": _SPLIT,
         "webdataset-nodesplitter": "name the node split: wds.WebDataset(urls, nodesplitter=wds.split_by_node), or "
                                    "wds.split_by_node before wds.split_by_worker in a wds.DataPipeline"}
# webdataset's own text (webdataset/shardlists.py, single_node_only); before 0.2.6 it said the second.
ERRORS = [(r"you need to add an explicit nodesplitter to your input pipeline for multi-node training"
           r"|input pipeline needs to be reconfigured for multinode training", "webdataset-nodesplitter")]
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = ("a risk only where this process is one of several ranks (WORLD_SIZE > 1, or an initialized process "
           "group). Outside a job: {loaders}; the map-style ones are never read by these rules, and the streams "
           "(each split by worker only, for one process) get the general note that --all shows. The measured rule is"
           " a count with no chance in it: a finite stream read to its end as both ranks must deliver the identical "
           "set (a stream that resamples shards at random does not), a longer one the same first samples in the same"
           " order. In your run (doctor -- COMMAND): 8 or more samples, and half the smallest rank's, reaching two "
           "ranks' loops in one epoch"
           " of a stream, a count")
_found = finder(SCENARIO, FIXES)
_RANK_WORDS = re.compile(r"\b(split_by_node|split_dataset_by_node|get_rank|RANK|rank|world_size|WORLD_SIZE|"
                         r"num_replicas|node_rank|num_nodes)\b")


def _distributed() -> int:
    """The number of ranks this process is one of (1 outside a distributed job)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size()
    return int(os.environ.get("WORLD_SIZE", "1") or 1)


def _stage_names(dataset) -> list[str]:
    return [getattr(s, "__name__", "") or type(s).__name__ for s in getattr(dataset, "pipeline", None) or []]


def _split_read(loader) -> str:
    """'split', 'default' (webdataset's single_node_only), 'none', or 'unsure' (code that could not be read)."""
    dataset = loader.dataset
    module = type(dataset).__module__ or ""
    if module.startswith("webdataset."):
        stages = _stage_names(dataset)
        return "default" if "single_node_only" in stages else "split" if "split_by_node" in stages else "none"
    if module.startswith("datasets."):
        return "split" if getattr(dataset, "_distributed", None) is not None else "none"
    sources, unreadable = code_sources(loader)
    return "split" if any(_RANK_WORDS.search(s) for s in sources) else "unsure" if unreadable else "none"


def _level(ranks: int) -> str:
    return "risk" if ranks > 1 else "note"


def static(examined):
    if not examined.setup.iterable:
        return []
    split, ranks = _split_read(examined.loader), _distributed()
    where = f"this process is one of {ranks} ranks" if ranks > 1 else "on N ranks"
    if split == "default":
        return [_found(_level(ranks), "webdataset-nodesplitter",
                       "a wds.WebDataset with its default nodesplitter (single_node_only): " + where
                       + ", its first worker raises ValueError: you need to add an explicit nodesplitter to your "
                       "input pipeline for multi-node training", general=ranks == 1)]
    if split != "none":
        return []
    return [_found(_level(ranks), "stream-not-split-by-rank",
                   f"{examined.setup.dataset} is a stream whose pipeline never splits by rank: " + where
                   + ", every rank reads every shard and an epoch is N passes over the data", general=ranks == 1)]


def _same_on_both(reads: list) -> str:
    """How both ranks' reads show one stream, or '' where they do not."""
    first, second = (r.get("hashes", []) for r in reads)
    if all(r.get("ended") for r in reads) and first and set(first) == set(second):
        return f"both delivered the same {len(set(first)):,} samples, the whole stream"
    shown = min(len(first), len(second))
    if not all(r.get("ended") for r in reads) and shown >= 8 and first[:shown] == second[:shown]:
        return f"both delivered the same first {shown:,} samples in the same order"
    return ""


def measured(examined, probe):
    read = probe.first(events.RANKS)
    if not (examined.setup.iterable and read and len(read.get("ranks", [])) == 2):
        return []
    ranks, reads = _distributed(), read["ranks"]
    as_torchrun = "read as rank 0 and as rank 1 of 2 (RANK, WORLD_SIZE as torchrun sets them)"
    rank, failed = next(((i, r) for i, r in enumerate(reads) if "error" in r), (None, None))
    if failed:
        if any(re.search(pattern, failed["error"]) for pattern, _ in ERRORS):
            raised = [line for line in failed["error"].splitlines() if line.strip()][-1]
            return [_found(_level(ranks), "webdataset-nodesplitter",
                           f"measured: {as_torchrun}, rank {rank}'s loader raised {raised.strip()}",
                           general=ranks == 1)]
        return []
    # A fork server started before the ranks stage has no RANK to hand its workers: nothing to judge.
    if examined.workers and examined.setup.start_method == "forkserver":
        return []
    same = _same_on_both(reads)
    if not same:
        return []
    # Words in its code never overrule the reading: a stream that asks for its rank and still delivers
    # the same samples as both ranks uses the answer for something else.  They only say that the
    # stream is made to run as ranks, so the reading is this loader's own risk, not a general note.
    asks = _split_read(examined.loader) == "split"
    why = " (its code asks for the rank, so it was read as two ranks without being told)" if asks and ranks == 1 \
        else ""
    return [_found("risk" if asks else _level(ranks), "stream-not-split-by-rank",
                   f"measured: {as_torchrun}, {same}: every rank would train on every sample{why}",
                   general=ranks == 1 and not asks)]


def merge(findings, probe):
    """One finding per rule: the two ranks' reading where the probe made it, else the probe's error,
    else the static reading."""
    def weight(finding):
        return 0 if finding.evidence.startswith("measured:") else 1 if finding.evidence.startswith("while ") else 2
    kept = {}
    for finding in sorted(findings, key=weight):
        kept.setdefault(finding.check, finding)
    return list(kept.values())


def observed(run):
    """In the user's own run: the same samples reached the training loops of several ranks in one epoch.
    A count with no chance in it: a stream split by rank never hands a sample to two ranks, and a share
    this large is no pair of identical records."""
    streams = [r for r in run.get("per_epoch", []) if r.get("iterable") and r.get("rank") is not None]
    ranks = sorted({r["rank"] for r in streams})
    shared = run.get("samples_in_two_processes", 0)
    smallest = min((r["distinct"] for r in streams if r["distinct"]), default=0)
    if len(ranks) < 2 or shared < 8 or shared < smallest / 2:
        return []
    return [_found("risk", "stream-not-split-by-rank",
                   f"measured in your run: {shared:,} samples reached the training loops of ranks "
                   f"{', '.join(map(str, ranks))} in the same epoch (the smallest rank received {smallest:,} distinct"
                   "): the stream is not split by rank",
                   figures={"ranks": ranks, "samples_on_several_ranks": shared, "smallest_rank_distinct": smallest})]


# Printed output (explain): a line marked with its rank (torchrun's "[rank1]:", a program's own "[rank 1]" or
# "rank=1") that prints a list of whole numbers (the sample ids or indices of a batch).
_RANK = re.compile(r"\brank\s*[:=]?\s*(\d+)\b", re.I)
_IDS = re.compile(r"\[\s*(\d+(?:\s*,\s*\d+|\s+\d+)+)\s*\]")
_STREAM = re.compile(r"IterableDataset|webdataset|\bwds\.|[Ss]treaming|split_dataset_by_node|\bshards?\b")
_read = text_finder(SCENARIO, FIXES, __doc__)


def _ids_by_rank(raw: list[str]) -> dict[str, list[tuple[int, ...]]]:
    by_rank = {}
    for line in raw:
        rank, ids = _RANK.search(line), _IDS.findall(line)
        if rank and ids:
            by_rank.setdefault(rank[1], []).append(tuple(int(n) for n in re.findall(r"\d+", ids[-1])))
    return by_rank


def pasted(lines, raw):
    """Two or more ranks that printed the same ids, batch for batch: every rank reads the same samples."""
    by_rank = _ids_by_rank(raw)
    ranks = sorted(by_rank, key=int)
    if len(ranks) < 2:
        return []
    shown = min(len(by_rank[r]) for r in ranks)
    same = [r for r in ranks if by_rank[r][:shown] == by_rank[ranks[0]][:shown]]
    ids = sum(len(batch) for batch in by_rank[ranks[0]][:shown])
    if len(same) < 2 or shown < 2 or ids < 4:
        return []
    evidence = (f"{len(same)} of {len(ranks)} ranks (rank {', rank '.join(same)}) printed the same {shown} lists of "
                f"ids, {ids} ids, in the same order")
    if _STREAM.search("\n".join(raw)):
        return [_read("likely", "stream-not-split-by-rank", evidence, "a stream every rank reads whole: its own code "
                      "splits it by worker, never by rank")]
    return [_read("possible", "stream-not-split-by-rank", evidence, "is the dataset a stream (an IterableDataset)? "
                  "Then only its own code can split it by rank (29); a map-style dataset needs DistributedSampler as "
                  "its sampler. `python -m scenarios doctor FILE.py:make_loader` reads your loader as rank 0 and "
                  "rank 1 of 2")]
