"""Token sequences in one flat binary file read through numpy.memmap, located by an index of
sizes and offsets, as fairseq's MMapIndexedDataset stores them (.bin + .idx).

Source: facebookresearch/fairseq, fairseq/data/indexed_dataset.py (MMapIndexedDataset),
commit 3680c78731de02d91500cb2f49abca9e0bb77694
https://github.com/facebookresearch/fairseq/blob/3680c78731de02d91500cb2f49abca9e0bb77694/fairseq/data/indexed_dataset.py
Well built: no risk expected (collate pads, the arrays are read by position).
"""
import atexit
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_corpus(prefix: Path, sentences: int = 2_000) -> None:
    rng = np.random.default_rng(3)
    sizes = rng.integers(5, 60, sentences).astype(np.int32)
    rng.integers(4, 32_000, int(sizes.sum()), dtype=np.int32).tofile(prefix.with_suffix(".bin"))
    np.save(prefix.with_suffix(".idx.npy"), sizes)


class MemmapTokens(Dataset):
    def __init__(self, prefix: Path):
        self.sizes = np.load(prefix.with_suffix(".idx.npy"))
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes[:-1], dtype=np.int64)])
        self.tokens = np.memmap(prefix.with_suffix(".bin"), dtype=np.int32, mode="r")

    def __len__(self):
        return len(self.sizes)

    def __getitem__(self, index):
        start = int(self.offsets[index])
        return torch.from_numpy(np.array(self.tokens[start:start + int(self.sizes[index])], dtype=np.int64))


def pad_batch(samples):
    return pad_sequence(samples, batch_first=True, padding_value=1)


def make_loader():
    prefix = scratch() / "train"
    write_corpus(prefix)
    return DataLoader(MemmapTokens(prefix), batch_size=32, shuffle=True, num_workers=2, collate_fn=pad_batch)
