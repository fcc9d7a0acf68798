"""Scenario 13, fixed: each worker streams its own share of the shard files.

    python scenarios/13_iterable_dataset_duplicates/broken.py   # each record 4 times, and a warning per extra one
    python scenarios/13_iterable_dataset_duplicates/fixed.py    # each record once

A streaming dataset over 5 shard files (30 records), with a __len__ so that progress bars
know the epoch's length, read by DataLoader(num_workers=4).  broken.py: each worker gets
its own copy of the dataset and iterates it to the end, so the epoch holds every record 4
times, and once more batches have come than len() promised, PyTorch warns "Length of
IterableDataset ... was reported to be 30 ..." for every batch after that.  fixed.py: worker
k reads only its share of the files (fixes/shard_by_worker.py), and the epoch holds each
record once, as with num_workers=0.
"""
import tempfile
from pathlib import Path

import torch
from torch.utils.data import DataLoader, IterableDataset

from _shard_files import check_epoch, warnings_shown, write_shards
from fixes.shard_by_worker import shard_by_worker


def read_shard(path):
    for line in Path(path).read_text().splitlines():
        record_id, value = line.split()
        yield int(record_id), torch.full((4,), float(value))


class ShardStream(IterableDataset):
    """Records streamed file by file, as a corpus too big for memory is."""

    def __init__(self, files):
        self.files = list(files)

    def __len__(self):  # what a progress bar (tqdm, Lightning) asks for
        return sum(len(Path(f).read_text().splitlines()) for f in self.files)

    def __iter__(self):
        # FIX: worker k of 4 reads files k, k+4, … (every 4th record if there are fewer files than workers).
        yield from shard_by_worker(self.files, read_shard)


def main(**loader_options):
    with tempfile.TemporaryDirectory() as root, warnings_shown() as shown:
        dataset = ShardStream(write_shards(root))
        loader = DataLoader(dataset, num_workers=4, **loader_options)
        print(f"{len(dataset)} records in {len(dataset.files)} shard files, len(loader) = {len(loader)}")
        fetched, batches = [], 0
        for batches, (record_ids, features) in enumerate(loader, start=1):
            fetched += record_ids.tolist()
        check_epoch(dataset, loader, fetched, batches, shown)


if __name__ == "__main__":
    main()
