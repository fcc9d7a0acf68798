"""Gives each worker its own files, but two at a time by worker id: with 5 files and 4 workers,
worker 3 gets none. Every record once, one worker idle: right idea, a slip in the split.
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
        mine = self.files[info.id * 2:info.id * 2 + 2] if info else self.files  # two files per worker
        for path in mine:
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
