"""Token ids packed into fixed-size binary chunk files (a small header, then the ids), streamed
as lit-gpt's PackedDataset streams them: each worker takes its own files
(filenames[shard_id::num_shards]), opens them with numpy.memmap inside its own iterator, and
yields blocks in an order drawn from a seeded generator; the stream ends when the worker's
files are used up (wrap=False).

Source: Lightning-AI/litgpt, lit_gpt/packed_dataset.py (PackedDataset, PackedDatasetBuilder,
PackedDatasetIterator), commit 3f3189b76a3e03756cad01f7fe7bb733fe2b6077
https://github.com/Lightning-AI/litgpt/blob/3f3189b76a3e03756cad01f7fe7bb733fe2b6077/lit_gpt/packed_dataset.py
Well built: no risk expected (files split among workers, memory maps opened in the workers).
"""
import atexit
import shutil
import struct
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

MAGIC, HEADER = b"LITPKDS", 24  # 7 + 8 + 1 + 8 bytes
CHUNK, BLOCK = 8_192, 129


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_chunks(root: Path, files: int = 4) -> list:
    rng = np.random.default_rng(29)
    names = []
    for i in range(files):
        path = root / f"train_slim_{i:010d}.bin"
        with open(path, "wb") as out:
            out.write(MAGIC + struct.pack("<Q", 1) + struct.pack("<B", 8) + struct.pack("<Q", CHUNK))
            out.write(rng.integers(0, 32_000, CHUNK, dtype=np.uint16).tobytes())
        names.append(str(path))
    return names


class PackedIterator:
    def __init__(self, filenames, block_size, seed):
        self.rng = np.random.default_rng(seed)
        self.filenames, self.block_size = filenames, block_size
        self.file_index, self.order, self.position, self.mmap = 0, [], 0, None

    def _load_next_file(self):
        if self.file_index >= len(self.filenames):
            raise StopIteration
        self.mmap = np.memmap(self.filenames[self.file_index], dtype=np.uint16, mode="r", offset=HEADER)
        self.file_index += 1
        self.order = self.rng.permutation(len(self.mmap) // self.block_size)
        self.position = 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.position >= len(self.order):
            self._load_next_file()
        start = int(self.order[self.position]) * self.block_size
        self.position += 1
        return torch.from_numpy(self.mmap[start:start + self.block_size].astype(np.int64))


class PackedDataset(IterableDataset):
    def __init__(self, filenames, block_size=BLOCK, seed=12345, num_processes=1, process_rank=0):
        self.filenames, self.block_size, self.seed = filenames, block_size, seed
        self.num_processes, self.process_rank = num_processes, process_rank

    def __iter__(self):
        info = get_worker_info()
        num_workers, worker_id = (info.num_workers, info.id) if info else (1, 0)
        num_shards = num_workers * self.num_processes
        shard_id = self.process_rank * num_workers + worker_id
        usable = len(self.filenames) // num_shards * num_shards
        return PackedIterator(self.filenames[shard_id:usable:num_shards], self.block_size, self.seed)


def make_loader():
    return DataLoader(PackedDataset(write_chunks(scratch())), batch_size=16, num_workers=2)
