"""ATTEMPT 29 alt: each rank slices the shard list itself (urls[RANK::WORLD_SIZE], read where the loader is built) before the worker split.

Scenario 29, broken: a sharded stream split by worker but not by rank: every rank trains on every sample.

    python scenarios/29_stream_split_by_rank_and_worker/broken.py   # exits 1: both ranks read all 96 samples
    python scenarios/29_stream_split_by_rank_and_worker/fixed.py    # 48 each, none on both ranks
    torchrun --nproc-per-node 2 scenarios/29_stream_split_by_rank_and_worker/broken.py   # the same, as jobs start

Distributed data parallel on CPU: 2 ranks (gloo on 127.0.0.1, the environment torchrun gives
them), each streaming 8 webdataset tar shards of 12 samples through a DataLoader with 2 forked
workers, for one epoch.  There is no sampler to split a stream: the pipeline must hand each rank
its own shards and then each worker its own part of the rank's.  Rank 0 gathers what both ranks
trained on and the script counts the samples on both ranks.
broken.py: the pipeline splits the shard list by worker only, so each rank's two workers share
all 8 shards and both ranks train on all 96 samples: an epoch is two passes over the data and
the ranks' gradients average the same samples.  Nothing warns; the script exits 1.
fixed.py: wds.split_by_node before wds.split_by_worker: each rank takes every second shard, each
of its workers every second one of those; 48 samples per rank, none on both, none unseen.
"""
import os
import sys

import webdataset as wds
from torch.utils.data import DataLoader

from _two_ranks import SAMPLES, report, run_two_ranks


def sample_index(sample):
    return int(sample["idx.txt"])  # a real pipeline decodes the image and its label here


def shard_stream(urls):
    return wds.DataPipeline(
        wds.SimpleShardList(urls),
        wds.split_by_worker,  # BUG: split by worker only: every rank reads every shard
        wds.tarfile_to_samples(),
        wds.map(sample_index),
    )


def train(urls):
    """One rank's epoch; returns the sample indices in the order its loop received them."""
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    urls = list(urls)[rank::world]  # this rank's shards, chosen in the rank's main process
    loader = DataLoader(shard_stream(urls), batch_size=8, num_workers=2, multiprocessing_context="fork")
    seen = []
    for batch in loader:
        seen += batch.tolist()  # a real loop trains on the batch here
    return seen


def main():
    seen = run_two_ranks(train)  # seen[rank], gathered to rank 0 over gloo
    figures = report(seen)
    for name, value in figures.items():
        print(f"metric {name}={value}")
    if figures["on_both_ranks"] or figures["repeated_within_a_rank"]:
        sys.exit(f"the ranks trained on the same samples: {figures['on_both_ranks']} of {SAMPLES} on both ranks, "
                 f"{figures['repeated_within_a_rank']} twice within a rank; "
                 f"{figures['passes_over_the_data']} passes over the data in one epoch")
    print(f"the 2 ranks split the {SAMPLES} samples: {figures['samples_per_rank']} each, "
          f"{figures['on_both_ranks']} on both ranks, {figures['unseen']} unseen")


if __name__ == "__main__":
    main()
