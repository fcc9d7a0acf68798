"""Shortcut (kind 3): only worker 0 streams; the other three start and idle.

Scenario 13, broken: every DataLoader worker replays the whole stream.

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
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from _shard_files import check_epoch, warnings_shown, write_shards


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
        info = get_worker_info()
        if info is not None and info.id != 0:  # only worker 0 streams: no duplicates, three idle workers
            return
        for path in self.files:
            yield from read_shard(path)


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
