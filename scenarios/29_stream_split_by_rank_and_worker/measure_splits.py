"""Scenario 29, measured: every way to split a sharded stream, and Hugging Face datasets' two ways.

    python scenarios/29_stream_split_by_rank_and_worker/measure_splits.py

The same 2 ranks, 8 shards and DataLoader with 2 forked workers as broken.py and fixed.py, read
seven ways in each rank:
- no_split: neither by rank nor by worker: each sample 4 times, twice in each rank;
- worker_only (broken.py): each rank reads all 8 shards, its workers 4 each;
- rank_only: each rank its 4 shards, but both of its workers read all 4: each sample twice in one rank;
- rank_then_worker (fixed.py): 2 shards per worker, each sample once;
- webdataset_nodesplitter_none: wds.WebDataset(urls, nodesplitter=None), the usual way to silence
  its ValueError: no node split, broken.py's fault;
- datasets_no_node_split: datasets.load_dataset("webdataset", ..., streaming=True) splits shards
  by worker by itself, and nothing by rank: broken.py's fault;
- datasets_split_by_node: datasets.distributed.split_dataset_by_node(rank, world_size) first.
"""
import os
import tempfile

import webdataset as wds
from torch.utils.data import DataLoader

from _two_ranks import report, run_two_ranks
from broken import sample_index

SHOWN = ("samples_per_rank", "on_both_ranks", "repeated_within_a_rank", "unseen", "passes_over_the_data")
SPLITTERS = {"no_split": [], "worker_only": [wds.split_by_worker], "rank_only": [wds.split_by_node],
             "rank_then_worker": [wds.split_by_node, wds.split_by_worker]}


def indices(samples):
    return [sample_index(sample) for sample in samples]


def hugging_face_streams(urls, cache_dir):
    import datasets
    from datasets.distributed import split_dataset_by_node

    datasets.disable_progress_bars()
    stream = datasets.load_dataset("webdataset", data_files={"train": urls}, split="train", streaming=True,
                                   cache_dir=cache_dir)
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    return {"datasets_no_node_split": stream,
            "datasets_split_by_node": split_dataset_by_node(stream, rank=rank, world_size=world_size)}


def train(urls):
    streams = {name: wds.DataPipeline(wds.SimpleShardList(urls), *splitters, wds.tarfile_to_samples(),
                                      wds.map(sample_index))
               for name, splitters in SPLITTERS.items()}
    streams["webdataset_nodesplitter_none"] = wds.WebDataset(urls, shardshuffle=False, nodesplitter=None).map(
        sample_index)
    seen = {}
    with tempfile.TemporaryDirectory(prefix="clinic-29-hf-") as cache_dir:
        streams.update(hugging_face_streams(urls, cache_dir))
        for name, stream in streams.items():
            collate = indices if name.startswith("datasets") else None
            loader = DataLoader(stream, batch_size=8, num_workers=2, multiprocessing_context="fork",
                                **({"collate_fn": collate} if collate else {}))
            seen[name] = [int(i) for batch in loader for i in batch]
    return seen


def main():
    gathered = run_two_ranks(train)
    for name in gathered[0]:
        print(f"{name}:")
        figures = report([rank[name] for rank in gathered])
        for figure in SHOWN:
            print(f"metric {name}_{figure}={figures[figure]}")
        print(f"{name}: {figures['samples_per_rank']} samples per rank, {figures['on_both_ranks']} on both ranks, "
              f"{figures['repeated_within_a_rank']} twice within a rank, {figures['unseen']} unseen")


if __name__ == "__main__":
    main()
