"""ATTEMPT 38 shortcut: the shuffle buffer made as large as a worker's data (96): it mixes by holding everything.

Scenario 38, broken: a shuffle buffer over shards sorted by source: each batch comes from one or two sources.

    python scenarios/38_shuffle_buffer_too_local/broken.py   # exits 1: about 2 sources a batch, a full shuffle 4.6
    python scenarios/38_shuffle_buffer_too_local/fixed.py    # every source read at once: about 4.5 a batch

A corpus of 6 sources (books, code, forums, …) exported one source at a time: 2 webdataset tar
shards of 16 samples each, 192 samples, streamed through a DataLoader with 2 workers in batches of
8 for one epoch.  Each worker reads its own shards (wds.split_by_worker: one shard of each source)
into its own shuffle buffer, and each batch is one worker's.  The script prints the sources of every
batch and counts, per batch, the sources in it, against what a shuffle of the whole corpus gives.
broken.py: the shards are shuffled and the samples pass a buffer of 8, as the webdataset README
shows, but a worker reads one shard after the other, so its buffer only ever holds one or two
sources: batches of one source, the source changing every few steps, the loss curve with them.
Nothing warns; the script exits 1.
fixed.py: one stream per source, mixed sample by sample (wds.RandomMix), into the same buffer of 8:
every batch draws from every source the worker still has, as a full shuffle would.
"""
import sys
import tempfile

import torch
import webdataset as wds
from torch.utils.data import DataLoader

from _sorted_shards import SAMPLES, by_source, full_shuffle_distinct, report, write_shards

BATCH = 8
BUFFER = 8  # samples each worker holds to shuffle (the README's 1000 against shards of 10,000, scaled down)


def sample_index(sample):
    return int(sample["idx.txt"])  # a real pipeline decodes the text or the image here


def shard_stream(urls):
    return wds.DataPipeline(
        wds.SimpleShardList(urls),
        wds.split_by_worker,
        wds.shuffle(len(urls)),  # this worker's shards in a new order every epoch
        wds.tarfile_to_samples(),
        wds.shuffle(96),  # was BUG: fed one shard at a time, the buffer holds one or two sources
        wds.map(sample_index),
    )


def train(urls):
    """One epoch; returns the sample indices of each batch, in the order the loop received them."""
    loader = DataLoader(shard_stream(urls), batch_size=BATCH, num_workers=2)
    batches = []
    for batch in loader:
        batches.append(batch.tolist())  # a real loop trains on the batch here
    return batches


def main():
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory(prefix="clinic-38-shards-") as root:
        urls = write_shards(root)
        print(f"{len(urls)} shards of {len(by_source(urls))} sources, {SAMPLES} samples")
        batches = train(urls)
    figures = report(batches)
    for name, value in figures.items():
        print(f"metric {name}={value}")
    full = full_shuffle_distinct(BATCH)
    if figures["distinct_sources_per_batch"] < full * 2 / 3:
        sys.exit(f"the batches mixed {figures['distinct_sources_per_batch']} sources on average (a full shuffle: "
                 f"{full}); {figures['one_source_batches']} of {figures['batches']} batches held one source")
    print(f"the batches mixed {figures['distinct_sources_per_batch']} sources on average (a full shuffle: {full}); "
          f"{figures['samples']} of {SAMPLES} samples, each once")


if __name__ == "__main__":
    main()
