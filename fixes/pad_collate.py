"""Batch samples of different sizes: pad them, say where the padding is, and keep it small.

Fixes scenario 16 (samples of different sizes): the default collate stacks the samples
of a batch with `torch.stack`, which fails as soon as two of them differ in length:

    RuntimeError: stack expects each tensor to be equal size, but got [37] at entry 0 and [12] at entry 1

and, when the batch was collated in a worker, the same error wrapped as
"RuntimeError: Caught RuntimeError in DataLoader worker process 0." with the worker's traceback.

    from pad_collate import LengthBucketBatchSampler, PadCollate

    sampler = LengthBucketBatchSampler(lengths, batch_size=32, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_sampler=sampler, num_workers=2, collate_fn=PadCollate(pad_value=0))
    for (tokens, lengths, mask), labels in loader:    # samples were (tokens, label)
        logits = model(tokens, mask)                  # the model must ignore what the mask marks False

- `PadCollate` pads every tensor field of the samples to the longest in the batch and puts a
  `Padded(values, lengths, mask)` in its place; other fields go through `default_collate`.
  `dims` names the dimensions that vary: `(0,)` for sequences `(L,)` or `(L, features)`,
  `(-2, -1)` for images `(C, H, W)` of different heights and widths.
- `LengthBucketBatchSampler` draws batches of similar length (shuffle, sort within pools of
  `pool_batches` batches, shuffle the batches), so that far less of each padded batch is padding.
  It runs in the main process (a batch sampler is never copied into workers) and gives a
  different, reproducible order each epoch.

One file, no project imports: copy it into your code base.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import Sampler
from torch.utils.data.dataloader import default_collate

__all__ = ["Padded", "PadCollate", "pad_tensors", "LengthBucketBatchSampler"]


class Padded(NamedTuple):
    """A padded batch: `values` (B, *padded shape), `lengths` (B,) or (B, len(dims)) sizes along
    the padded dims, `mask` (B, *padded sizes of those dims), True where a value is real."""
    values: torch.Tensor
    lengths: torch.Tensor
    mask: torch.Tensor

    @property
    def padding_fraction(self) -> float:
        """Share of the mask's positions that are padding (0.0 for a batch of equal sizes)."""
        return 1.0 - self.mask.sum().item() / max(self.mask.numel(), 1)


def _round_up(size: int, multiple: int | None) -> int:
    return size if not multiple else math.ceil(size / multiple) * multiple


def pad_tensors(tensors: Sequence[torch.Tensor], pad_value=0, dims=(0,), pad_to_multiple_of=None) -> Padded:
    """Pad `tensors` along `dims` to the largest size in the batch (rounded up to
    `pad_to_multiple_of`), and stack them: the other dimensions must agree."""
    tensors = [torch.as_tensor(t) for t in tensors]
    if not tensors:
        raise ValueError("pad_tensors needs at least one tensor")
    ndim = tensors[0].dim()
    if not dims or any(not -ndim <= d < ndim for d in dims):
        raise ValueError(f"cannot pad dims {tuple(dims)} of tensors with {ndim} dimensions; pass dims=(...) "
                         "naming the dimensions that vary, e.g. (0,) for (length, ...), (-2, -1) for (C, H, W)")
    dims = tuple(sorted({d % ndim for d in dims}))
    for i, t in enumerate(tensors):
        if t.dim() != ndim or t.dtype != tensors[0].dtype:
            raise ValueError(f"entry {i} is {tuple(t.shape)} {t.dtype}, entry 0 is "
                             f"{tuple(tensors[0].shape)} {tensors[0].dtype}: samples must agree in rank and dtype")
        for d in range(ndim):
            if d not in dims and t.shape[d] != tensors[0].shape[d]:
                raise ValueError(f"entry {i} has size {t.shape[d]} in dim {d}, entry 0 has {tensors[0].shape[d]}, "
                                 f"and dim {d} is not padded (dims={dims}): add it to dims, or resize the samples")
    sizes = torch.tensor([[t.shape[d] for d in dims] for t in tensors], dtype=torch.long)
    padded_sizes = [_round_up(int(sizes[:, k].max()), pad_to_multiple_of) for k in range(len(dims))]
    shape = list(tensors[0].shape)
    for d, size in zip(dims, padded_sizes):
        shape[d] = size
    if dims == (0,):  # sequences: one call into torch instead of a copy per sample
        values = pad_sequence(tensors, batch_first=True, padding_value=pad_value)
        if values.shape[1] < padded_sizes[0]:
            extra = torch.full((len(tensors), padded_sizes[0] - values.shape[1], *shape[1:]), pad_value,
                               dtype=values.dtype)
            values = torch.cat([values, extra], dim=1)
    else:
        values = torch.full((len(tensors), *shape), pad_value, dtype=tensors[0].dtype)
        for i, t in enumerate(tensors):
            values[(i, *(slice(0, n) for n in t.shape))] = t
    # True where a value is the sample's own: inside its size along every padded dim.
    mask = torch.ones((len(tensors), *padded_sizes), dtype=torch.bool)
    for k, size in enumerate(padded_sizes):
        inside = torch.arange(size) < sizes[:, k, None]  # (batch, size)
        mask &= inside.view(len(tensors), *(size if j == k else 1 for j in range(len(dims))))
    return Padded(values, sizes[:, 0].clone() if len(dims) == 1 else sizes, mask)


class PadCollate:
    """A `collate_fn` for samples of different sizes.

    A sample may be a tensor (or numpy array), or a tuple, list or dict of fields. Each field
    that is a tensor or array with at least one dimension (or, with `fields=`, each field
    named there: indices for tuples and lists, names for namedtuples, keys for dicts) becomes
    a `Padded` batch; every other field is collated by `default_collate`; a namedtuple keeps
    its type, a tuple becomes a list (as with `default_collate`). Picklable, so it works with
    any start method.
    """

    def __init__(self, pad_value=0, dims=(0,), pad_to_multiple_of=None, fields=None):
        self.pad_value, self.dims, self.pad_to_multiple_of = pad_value, tuple(dims), pad_to_multiple_of
        self.fields = None if fields is None else set(fields)

    def _padded(self, key, first) -> bool:
        if self.fields is not None and key is not None:
            return key in self.fields
        return isinstance(first, (torch.Tensor, np.ndarray)) and first.ndim >= 1

    def _collate(self, key, column):
        if self._padded(key, column[0]):
            return pad_tensors(column, self.pad_value, self.dims, self.pad_to_multiple_of)
        return default_collate(column)

    def __call__(self, batch):
        first = batch[0]
        if isinstance(first, Mapping):
            return {key: self._collate(key, [sample[key] for sample in batch]) for key in first}
        if isinstance(first, tuple) and hasattr(first, "_fields"):  # a namedtuple: fields by name
            columns = zip(*batch, strict=True)
            return type(first)(*(self._collate(name, list(c)) for name, c in zip(first._fields, columns)))
        if isinstance(first, (tuple, list)):
            return [self._collate(i, list(column)) for i, column in enumerate(zip(*batch, strict=True))]
        return self._collate(None, list(batch))


class LengthBucketBatchSampler(Sampler):
    """Batches of indices whose `lengths` are close: pass it as `DataLoader(batch_sampler=...)`.

    Each epoch: shuffle all indices (if `shuffle`), cut them into pools of `pool_batches`
    batches, sort each pool by length, cut it into batches, and shuffle the order of the
    batches. A larger pool means less padding and less random batches. Every index appears
    once per epoch; with `drop_last`, the one short batch (at most batch_size - 1 samples) is
    dropped. The order of epoch e depends only on `seed` and e; each pass over the sampler
    moves to the next epoch, and `set_epoch(e)` picks one (to resume a run).
    """

    def __init__(self, lengths, batch_size: int, shuffle: bool = True, seed: int = 0,
                 pool_batches: int = 50, drop_last: bool = False):
        if batch_size < 1 or pool_batches < 1:
            raise ValueError(f"batch_size and pool_batches must be at least 1, got {batch_size}, {pool_batches}")
        self.lengths = torch.as_tensor(list(lengths), dtype=torch.long)
        self.batch_size, self.shuffle, self.seed = batch_size, shuffle, seed
        self.pool_batches, self.drop_last = pool_batches, drop_last
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        n = len(self.lengths)
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

    def __iter__(self):
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        self.epoch += 1
        n = len(self.lengths)
        order = torch.randperm(n, generator=generator) if self.shuffle else torch.arange(n)
        pool = self.batch_size * self.pool_batches  # a multiple of batch_size: only the last batch can be short
        batches = []
        for start in range(0, n, pool):
            chunk = order[start:start + pool]
            chunk = chunk[torch.argsort(self.lengths[chunk], stable=True)]
            batches += [chunk[i:i + self.batch_size].tolist() for i in range(0, len(chunk), self.batch_size)]
        if self.drop_last and batches and len(batches[-1]) < self.batch_size:
            batches.pop()
        if self.shuffle:
            batches = [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]
        yield from batches
