"""A sharded stream shuffled the way datasets' IterableDataset shuffled it before the fix of
issue 6673: the epoch is a plain attribute set by set_epoch(), the shard order and the
shuffle buffer's seed are drawn from (seed, epoch), and each worker reads its own shards.
With persistent_workers=True the workers keep the copy of the dataset they got at the first
epoch, so set_epoch() in the training loop (train_epochs below) never reaches them: every
epoch replays the order of epoch 0.

Source: huggingface/datasets, src/datasets/iterable_dataset.py (IterableDataset.set_epoch,
_effective_generator, shuffle_data_sources, shards split among workers), release 2.17.1
https://github.com/huggingface/datasets/blob/2.17.1/src/datasets/iterable_dataset.py
issue https://github.com/huggingface/datasets/issues/6673 (fixed by
https://github.com/huggingface/datasets/pull/6710, the epoch moved into shared memory)
Faulty: scenario 14 (persistent workers never see set_epoch).
"""
import atexit
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

SHARDS, ROWS = 4, 64


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_shards(root: Path) -> list:
    paths = []
    for s in range(SHARDS):
        path = root / f"train-{s:05d}-of-{SHARDS:05d}.jsonl"
        path.write_text("\n".join(json.dumps({"id": s * ROWS + r, "x": [float(r)] * 8}) for r in range(ROWS)))
        paths.append(str(path))
    return paths


class ShuffledShardStream(IterableDataset):
    def __init__(self, shards, seed: int = 42, buffer_size: int = 32):
        self.shards, self.seed, self.buffer_size = shards, seed, buffer_size
        self._epoch = 0  # an ordinary attribute: each worker keeps the value it was forked with

    def set_epoch(self, epoch: int):
        self._epoch = epoch

    def _effective_generator(self):
        base = np.random.default_rng(self.seed).integers(0, 1 << 63)
        return np.random.default_rng(int(base - self._epoch))

    def __iter__(self):
        rng = self._effective_generator()
        shards = [self.shards[i] for i in rng.permutation(len(self.shards))]
        info = get_worker_info()
        if info is not None:
            shards = shards[info.id::info.num_workers]
        buffer = []
        for shard in shards:
            for line in Path(shard).read_text().splitlines():
                row = json.loads(line)
                item = (row["id"], torch.tensor(row["x"]))
                if len(buffer) < self.buffer_size:
                    buffer.append(item)
                    continue
                k = int(rng.integers(0, self.buffer_size))
                yield buffer[k]
                buffer[k] = item
        rng.shuffle(buffer)
        yield from buffer


def make_loader():
    stream = ShuffledShardStream(write_shards(scratch()))
    return DataLoader(stream, batch_size=16, num_workers=2, persistent_workers=True)


def train_epochs(epochs: int = 3) -> list:
    """The loop the datasets docs recommend; with persistent workers every epoch starts alike."""
    loader = make_loader()
    firsts = []
    for epoch in range(epochs):
        loader.dataset.set_epoch(epoch)
        firsts.append(next(iter(loader))[0][:6].tolist())
    return firsts
