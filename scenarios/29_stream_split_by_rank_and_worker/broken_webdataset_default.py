"""Scenario 29, broken the loud way: wds.WebDataset with its default nodesplitter, on 2 ranks.

    python scenarios/29_stream_split_by_rank_and_worker/broken_webdataset_default.py   # exits 1: ValueError

The same 2 ranks, 8 shards and DataLoader with 2 forked workers as broken.py, with the shards read
through webdataset's WebDataset class, as its README and most training scripts write it.  Its
default nodesplitter, single_node_only, lets one process through and refuses a second rank:
each rank's first worker raises webdataset's own
`ValueError: you need to add an explicit nodesplitter to your input pipeline for multi-node training`,
the DataLoader re-raises it in the rank, and the launcher ends the job.  The library refuses to
guess (its maintainer, webdataset#440): all shards on every rank is a choice some jobs make on
purpose, with resampled shards.  The fix is fixed.py's: WebDataset(urls, nodesplitter=wds.split_by_node).
"""
import webdataset as wds
from torch.utils.data import DataLoader

from _two_ranks import report, run_two_ranks
from broken import sample_index


def train(urls):
    dataset = wds.WebDataset(urls, shardshuffle=False).map(sample_index)  # BUG: no nodesplitter for 2 ranks
    loader = DataLoader(dataset, batch_size=8, num_workers=2, multiprocessing_context="fork")
    return [i for batch in loader for i in batch.tolist()]


def main():
    for name, value in report(run_two_ranks(train)).items():
        print(f"metric {name}={value}")


if __name__ == "__main__":
    main()
