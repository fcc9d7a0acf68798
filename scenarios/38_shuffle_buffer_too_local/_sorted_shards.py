"""The corpus the scripts stream, written one source after another, and the mix each batch had.

write_shards(root) writes SHARDS_PER_SOURCE webdataset tar files of PER_SHARD samples for each of
SOURCES, as a corpus arrives when each source is exported on its own (`books-00000.tar`, …); it
returns their paths sorted by name, as `sorted(glob("*.tar"))` lists them.  Sample i holds its index
in `idx.txt`: i // (SHARDS_PER_SOURCE * PER_SHARD) is its source, the shard and the place in the
shard follow, so a batch of indices says where every sample came from.

report(batches) prints one line per batch (the sources in it) and returns the figures the scripts
print as `metric` lines; a batch is one worker's, and a worker mixes only the sources of its own shards
(`fewest_sources_in_a_worker`).  `most_held_in_a_buffer` is a count with no chance in it: a sample delivered
at place p of a worker's stream whose shard had to be read up to its n-th sample proves that the
worker had read that much more than it handed over; no buffer of B samples can show more than B - 1.
"""
import collections
import math
import os

import webdataset as wds

SOURCES = ("books", "code", "forums", "papers", "web", "wiki")
SHARDS_PER_SOURCE, PER_SHARD = 2, 16  # 2 shards a source: one for each of the 2 DataLoader workers
PER_SOURCE = SHARDS_PER_SOURCE * PER_SHARD
SAMPLES = len(SOURCES) * PER_SOURCE


def source_of(index: int) -> str:
    return SOURCES[index // PER_SOURCE]


def shard_of(index: int) -> tuple[int, int]:
    """(the shard's place in the sorted list, the sample's place in its shard)."""
    return index // PER_SHARD, index % PER_SHARD


def write_shards(root) -> list[str]:
    paths = []
    for s, source in enumerate(SOURCES):
        for k in range(SHARDS_PER_SOURCE):
            path = os.path.join(root, f"{source}-{k:05d}.tar")
            with wds.TarWriter(path) as sink:
                first = s * PER_SOURCE + k * PER_SHARD
                for i in range(first, first + PER_SHARD):
                    sink.write({"__key__": f"{source}{i:05d}", "idx.txt": str(i)})
            paths.append(path)
    return sorted(paths)


def by_source(urls: list[str]) -> list[list[str]]:
    """The shard paths grouped by the source their file name starts with."""
    groups = collections.defaultdict(list)
    for url in urls:
        groups[os.path.basename(url).rsplit("-", 1)[0]].append(url)
    return list(groups.values())


def full_shuffle_distinct(batch: int) -> float:
    """The sources a batch of `batch` samples drawn from the whole corpus holds on average."""
    none_of_one = math.comb(SAMPLES - PER_SOURCE, batch) / math.comb(SAMPLES, batch)
    return round(len(SOURCES) * (1 - none_of_one), 2)


def _most_held(stream: list[int]) -> int:
    """The fewest samples a worker must have read but not yet handed over, at the worst place of its stream."""
    read_to, most = {}, 0
    for place, index in enumerate(stream):
        shard, at = shard_of(index)
        read_to[shard] = max(read_to.get(shard, 0), at + 1)
        most = max(most, sum(read_to.values()) - (place + 1))
    return most


def report(batches: list[list[int]]) -> dict:
    """Print the sources of each batch and return the figures: batches -> the sample indices of each."""
    distinct = []
    for number, batch in enumerate(batches):
        counts = collections.Counter(map(source_of, batch))
        distinct.append(len(counts))
        print(f"batch {number:2d}: " + ", ".join(f"{source} {n}" for source, n in counts.most_common()))
    seen = [i for batch in batches for i in batch]
    # the 2 workers read alternate shards (split_by_worker): a shard's place in the list says whose it is
    streams = [[i for i in seen if shard_of(i)[0] % 2 == worker] for worker in (0, 1)]
    return {
        "batches": len(batches),
        "samples": len(seen),
        "unseen": SAMPLES - len(set(seen)),
        "distinct_sources_per_batch": round(sum(distinct) / max(1, len(distinct)), 2),
        "one_source_batches": distinct.count(1),
        "most_held_in_a_buffer": max(map(_most_held, streams)),
        # the DataLoader takes batches from its 2 workers in turn: every second batch is one worker's
        "fewest_sources_in_a_worker": min(len({source_of(i) for b in batches[w::2] for i in b}) for w in (0, 1)),
    }
