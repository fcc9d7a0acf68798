# Source: FunAudioLLM/CosyVoice, cosyvoice/dataset/dataset.py (https://github.com/FunAudioLLM/CosyVoice/blob/main/cosyvoice/dataset/dataset.py:
#   class DistributedSampler whose update() reads dist rank/world_size and torch.utils.data.get_worker_info(), and whose
#   sample() shuffles the list of shard files with random.Random(epoch), takes data[rank::world_size] and then
#   data[worker_id::num_workers]; class DataList(IterableDataset) calling sampler.update() inside __iter__; Processor
#   chaining the pipeline functions), with cosyvoice/dataset/processor.py's parquet_opener / batch / padding stages and
#   CosyVoice issue #427 (https://github.com/FunAudioLLM/CosyVoice/issues/427, 2024), where a maintainer points to
#   this split as the reason workers do not duplicate data.
# Kept: DistributedSampler and DataList as written (worker split computed in the worker, at __iter__ time), the
#   Processor chain, a parquet opener yielding one utterance per row with the sampler info, static batching and a
#   padding collate inside the pipeline, DataLoader(batch_size=None).
# Changed: 8 synthetic Parquet shards of 25 utterances (token ids and an 80-bin feature matrix of 20-60 frames) in a
#   temp dir (removed at exit) instead of the prepared parquet lists; tokenizing, resampling and fbank stages left
#   out; batch size 8 utterances; 2 workers, no torch.distributed init (rank 0 of 1).
# EXPECTED: none (the shard list is split by rank and by get_worker_info inside each worker; variable-length features
#   are padded by the pipeline's own padding stage)
import atexit
import math
import os
import random
import shutil
import tempfile
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
import torch.distributed as dist
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, IterableDataset


def _write_shards(n_shards=8, per_shard=25):
    root = tempfile.mkdtemp(prefix="fc-cosyvoice-")
    atexit.register(shutil.rmtree, root, True)
    rng = np.random.default_rng(427)
    paths = []
    for s in range(n_shards):
        rows = {"utt": [], "text_token": [], "speech_feat": [], "num_frames": []}
        for u in range(per_shard):
            frames = int(rng.integers(20, 61))
            rows["utt"].append(f"spk{s:02d}_utt{u:03d}")
            rows["text_token"].append(rng.integers(0, 6000, int(rng.integers(5, 30))).tolist())
            rows["speech_feat"].append(rng.normal(size=frames * 80).astype(np.float32).tolist())
            rows["num_frames"].append(frames)
        path = os.path.join(root, f"parquet_{s:09d}.tar")
        pq.write_table(pa.table(rows), path)
        paths.append(path)
    return paths


class Processor(IterableDataset):

    def __init__(self, source, f, *args, **kw):
        assert callable(f)
        self.source = source
        self.f = f
        self.args = args
        self.kw = kw

    def set_epoch(self, epoch):
        self.source.set_epoch(epoch)

    def __iter__(self):
        assert self.source is not None
        assert callable(self.f)
        return self.f(iter(self.source), *self.args, **self.kw)


class DistributedSampler:

    def __init__(self, shuffle=True, partition=True):
        self.epoch = -1
        self.update()
        self.shuffle = shuffle
        self.partition = partition

    def update(self):
        assert dist.is_available()
        if dist.is_initialized():
            self.rank = dist.get_rank()
            self.world_size = dist.get_world_size()
        else:
            self.rank = 0
            self.world_size = 1
        worker_info = torch.utils.data.get_worker_info()
        if worker_info is None:
            self.worker_id = 0
            self.num_workers = 1
        else:
            self.worker_id = worker_info.id
            self.num_workers = worker_info.num_workers
        return dict(rank=self.rank, world_size=self.world_size, worker_id=self.worker_id, num_workers=self.num_workers)

    def set_epoch(self, epoch):
        self.epoch = epoch

    def sample(self, data):
        data = list(range(len(data)))
        if self.partition:
            if self.shuffle:
                random.Random(self.epoch).shuffle(data)
            if len(data) < self.world_size:
                data = data * math.ceil(self.world_size / len(data))
                data = data[:self.world_size]
            data = data[self.rank::self.world_size]
        if len(data) < self.num_workers:
            data = data * math.ceil(self.num_workers / len(data))
            data = data[:self.num_workers]
        data = data[self.worker_id::self.num_workers]
        return data


class DataList(IterableDataset):

    def __init__(self, lists, shuffle=True, partition=True):
        self.lists = lists
        self.sampler = DistributedSampler(shuffle, partition)

    def set_epoch(self, epoch):
        self.sampler.set_epoch(epoch)

    def __iter__(self):
        sampler_info = self.sampler.update()
        indexes = self.sampler.sample(self.lists)
        for index in indexes:
            data = dict(src=self.lists[index])
            data.update(sampler_info)
            yield data


def parquet_opener(data, mode='train'):
    for sample in data:
        table = pq.read_table(sample['src'])
        for row in table.to_pylist():
            row.update(sample)
            yield row


def feat_to_tensor(data, mode='train'):
    for sample in data:
        sample['speech_feat'] = torch.tensor(sample['speech_feat']).view(sample['num_frames'], 80)
        sample['text_token'] = torch.tensor(sample['text_token'])
        yield sample


def static_batch(data, batch_size=8, mode='train'):
    buf = []
    for sample in data:
        buf.append(sample)
        if len(buf) >= batch_size:
            yield buf
            buf = []
    if len(buf) > 0:
        yield buf


def padding(data, mode='train'):
    for sample in data:
        order = torch.argsort(torch.tensor([x['speech_feat'].size(0) for x in sample]), descending=True)
        feats = [sample[i]['speech_feat'] for i in order]
        tokens = [sample[i]['text_token'] for i in order]
        yield {
            'utts': [sample[i]['utt'] for i in order],
            'speech_feat': pad_sequence(feats, batch_first=True, padding_value=0),
            'speech_feat_len': torch.tensor([f.size(0) for f in feats], dtype=torch.int32),
            'text_token': pad_sequence(tokens, batch_first=True, padding_value=0),
            'text_token_len': torch.tensor([t.size(0) for t in tokens], dtype=torch.int32),
        }


def Dataset(lists, data_pipeline, mode='train', shuffle=True, partition=True):
    dataset = DataList(lists, shuffle=shuffle, partition=partition)
    for func in data_pipeline:
        dataset = Processor(dataset, func, mode=mode)
    return dataset


def make_loader():
    pipeline = [parquet_opener, feat_to_tensor, partial(static_batch, batch_size=8), padding]
    train_dataset = Dataset(_write_shards(), pipeline, mode='train', shuffle=True, partition=True)
    train_dataset.set_epoch(0)
    return DataLoader(train_dataset, batch_size=None, pin_memory=False, num_workers=2, prefetch_factor=2)
