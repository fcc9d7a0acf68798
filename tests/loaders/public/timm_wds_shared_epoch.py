"""Samples in tar shards read as timm's ReaderWds reads them: the shard list is shuffled with a
seed of (fixed seed + epoch), the epoch held in a multiprocessing.Value (timm's SharedCount) so
that set_epoch() in the training process reaches workers that persist between epochs; each
worker then takes every num_workers-th shard, groups the tar members of one key into a sample,
and shuffles samples with its own seed.

Source: huggingface/pytorch-image-models, timm/data/readers/reader_wds.py (ReaderWds,
detshuffle2, _split_by_node_and_worker), commit 11f266409ca4d424725d9b3f40bdec9d23590ea3
https://github.com/huggingface/pytorch-image-models/blob/11f266409ca4d424725d9b3f40bdec9d23590ea3/timm/data/readers/reader_wds.py
and timm/data/readers/shared_count.py (SharedCount).
Well built: no risk expected (persistent workers read the epoch from shared memory; shards split per worker).
"""
import atexit
import io
import random
import shutil
import tarfile
import tempfile
from itertools import islice
from multiprocessing import Value
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

SHARDS, PER_SHARD = 4, 48


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_shards(root: Path) -> list:
    rng = np.random.default_rng(23)
    paths = []
    for s in range(SHARDS):
        path = root / f"train-{s:06d}.tar"
        with tarfile.open(path, "w") as tar:
            for i in range(PER_SHARD):
                key = f"{s:03d}{i:05d}"
                png = io.BytesIO()
                Image.fromarray(rng.integers(0, 256, (24, 24, 3), dtype=np.uint8)).save(png, format="PNG")
                for suffix, payload in ((".png", png.getvalue()), (".cls", str(int(rng.integers(0, 10))).encode())):
                    info = tarfile.TarInfo(key + suffix)
                    info.size = len(payload)
                    tar.addfile(info, io.BytesIO(payload))
        paths.append(str(path))
    return paths


class SharedCount:
    def __init__(self, epoch: int = 0):
        self.shared_epoch = Value("i", epoch)

    @property
    def value(self):
        return self.shared_epoch.value

    @value.setter
    def value(self, epoch):
        self.shared_epoch.value = epoch


def tar_samples(urls):
    """Group consecutive members that share a key, as webdataset's tarfile_to_samples does."""
    for url in urls:
        with tarfile.open(url) as tar:
            current, sample = None, {}
            for member in tar:
                key, _, ext = member.name.partition(".")
                if key != current and sample:
                    yield sample
                    sample = {}
                current = key
                sample[ext] = tar.extractfile(member).read()
            if sample:
                yield sample


class ReaderWdsLike(IterableDataset):
    def __init__(self, urls, seed: int = 42, sample_shuffle: int = 32):
        self.urls, self.common_seed, self.sample_shuffle = urls, seed, sample_shuffle
        self.epoch_count = SharedCount()

    def set_epoch(self, count: int):
        self.epoch_count.value = count

    def __iter__(self):
        info = get_worker_info()
        worker_id, num_workers = (info.id, info.num_workers) if info else (0, 1)
        worker_seed = info.seed if info else self.common_seed
        urls = list(self.urls)
        random.Random(self.common_seed + self.epoch_count.value).shuffle(urls)  # same order in every worker
        mine = list(islice(urls, worker_id, None, num_workers))
        rng, buffer = random.Random(worker_seed), []
        for sample in tar_samples(mine):
            buffer.append(sample)
            if len(buffer) >= self.sample_shuffle:
                yield self.decode(buffer.pop(rng.randrange(len(buffer))))
        rng.shuffle(buffer)
        for sample in buffer:
            yield self.decode(sample)

    @staticmethod
    def decode(sample):
        image = np.asarray(Image.open(io.BytesIO(sample["png"])).convert("RGB"), dtype=np.float32) / 255.0
        return torch.from_numpy(image).permute(2, 0, 1), int(sample["cls"])


def make_loader():
    dataset = ReaderWdsLike(write_shards(scratch()))
    return DataLoader(dataset, batch_size=16, num_workers=2, persistent_workers=True)


def train_epochs(epochs: int = 2) -> list:
    """The loop timm's train.py runs: set the epoch on the reader, then iterate."""
    loader = make_loader()
    seen = []
    for epoch in range(epochs):
        loader.dataset.set_epoch(epoch)
        seen.append(sum(len(targets) for _, targets in loader))
    return seen
