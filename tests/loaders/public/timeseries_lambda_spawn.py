"""Multivariate series of different lengths (UEA classification archives) batched by a collate
that pads every series to seq_len and returns padding masks, passed to the DataLoader as a
lambda made inside data_provider(): collate_fn=lambda x: collate_fn(x, max_len=args.seq_len).
Under fork nothing is pickled and it runs; on macOS, where workers are started with spawn
(set here with multiprocessing_context="spawn"), the lambda cannot be pickled and the loader
fails before its first batch, as reported in thuml/Time-Series-Library issue 129
("Can't pickle local object 'data_provider.<locals>.<lambda>'").

Source: thuml/Time-Series-Library, data_provider/data_factory.py (data_provider, the
classification branch) and data_provider/uea.py (collate_fn, padding_mask),
commit 040ea76d1079f2872f36c31b5579efacd384256f
https://github.com/thuml/Time-Series-Library/blob/040ea76d1079f2872f36c31b5579efacd384256f/data_provider/data_factory.py
issue https://github.com/thuml/Time-Series-Library/issues/129
Faulty: scenario 09 (a lambda collate under spawn).
"""
from types import SimpleNamespace

import torch
from torch.utils.data import DataLoader, Dataset


class UEAloader(Dataset):
    def __init__(self, series: int = 240, features: int = 3):
        generator = torch.Generator().manual_seed(32)
        lengths = torch.randint(20, 60, (series,), generator=generator).tolist()
        self.feature_rows = [torch.randn(n, features, generator=generator) for n in lengths]
        self.labels = torch.randint(0, 4, (series,), generator=generator)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return self.feature_rows[index], self.labels[index]


def padding_mask(lengths, max_len):
    return torch.arange(max_len).unsqueeze(0) < lengths.unsqueeze(1)  # True where there is data


def collate_fn(data, max_len=None):
    features, labels = zip(*data)
    lengths = torch.tensor([min(x.shape[0], max_len) for x in features])
    batch = torch.zeros(len(features), max_len, features[0].shape[-1])
    for i, x in enumerate(features):
        end = min(x.shape[0], max_len)
        batch[i, :end] = x[:end]
    return batch, torch.stack(labels), padding_mask(lengths, max_len)


def data_provider(args, flag):
    data_set = UEAloader()
    shuffle_flag = flag not in ("test", "TEST")
    data_loader = DataLoader(
        data_set,
        batch_size=args.batch_size,
        shuffle=shuffle_flag,
        num_workers=args.num_workers,
        drop_last=False,
        collate_fn=lambda x: collate_fn(x, max_len=args.seq_len),
        multiprocessing_context="spawn",  # macOS's default start method, where the issue was reported
    )
    return data_set, data_loader


def make_loader():
    args = SimpleNamespace(batch_size=16, num_workers=2, seq_len=48)
    return data_provider(args, "TRAIN")[1]
