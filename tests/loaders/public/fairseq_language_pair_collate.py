"""Sentence pairs for translation served by a LanguagePairDataset-shaped dataset: each item is a
dict of id, source and target token tensors, and the collate pads them as fairseq's collate does
(collate_tokens: source padded on the left, target on the right, a shifted copy of the target
with EOS moved to the front as prev_output_tokens, the batch sorted by descending source length).
Batches come from ordered_indices (shuffle, then a stable sort by target and source size) cut by
a token budget, as fairseq's batch_by_size does, and reach the DataLoader as its batch_sampler.
The tokens of each side sit in one flat int64 array with offsets, as fairseq's indexed datasets
keep them.

Source: facebookresearch/fairseq, fairseq/data/language_pair_dataset.py (collate, merge,
LanguagePairDataset.__getitem__, collater, ordered_indices) and fairseq/data/data_utils.py
(collate_tokens), commit 03920717ae6eaa6050ad4e917265eb96997f3219
https://github.com/facebookresearch/fairseq/blob/03920717ae6eaa6050ad4e917265eb96997f3219/fairseq/data/language_pair_dataset.py
Well built: no risk expected (sentences of different lengths are padded in the collate, the
tokens are numpy buffers read by position).
"""
import atexit
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

PAD, EOS, UNK, VOCAB = 1, 2, 3, 4_000


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_side(root: Path, name: str, lengths: np.ndarray, rng: np.random.Generator) -> Path:
    """One side of the corpus: all sentences' tokens (each ending in EOS) back to back, plus sizes."""
    tokens = rng.integers(4, VOCAB, int(lengths.sum()), dtype=np.int64)
    tokens[np.cumsum(lengths) - 1] = EOS
    np.save(root / f"train.{name}.tokens.npy", tokens)
    np.save(root / f"train.{name}.sizes.npy", lengths.astype(np.int64))
    return root / f"train.{name}"


def write_corpus(root: Path, pairs: int = 2_000) -> tuple:
    rng = np.random.default_rng(31)
    src_lengths = rng.integers(4, 48, pairs)
    tgt_lengths = np.clip(src_lengths + rng.integers(-4, 6, pairs), 3, None)
    return write_side(root, "de", src_lengths, rng), write_side(root, "en", tgt_lengths, rng)


class TokenArray(Dataset):
    """Sentence i is tokens[offsets[i]:offsets[i] + sizes[i]]."""

    def __init__(self, prefix: Path):
        self.tokens = np.load(f"{prefix}.tokens.npy")
        self.sizes = np.load(f"{prefix}.sizes.npy")
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)[:-1]])

    def __len__(self):
        return len(self.sizes)

    def __getitem__(self, i):
        start = self.offsets[i]
        return torch.from_numpy(self.tokens[start:start + self.sizes[i]].copy())


def collate_tokens(values, pad_idx, eos_idx, left_pad, move_eos_to_beginning=False):
    """Pad 1-D token tensors into one (batch, longest) tensor."""
    width = max(v.numel() for v in values)
    out = values[0].new_full((len(values), width), pad_idx)
    for row, v in enumerate(values):
        dst = out[row, width - v.numel():] if left_pad else out[row, :v.numel()]
        if move_eos_to_beginning:
            dst[0] = eos_idx
            dst[1:] = v[:-1]
        else:
            dst.copy_(v)
    return out


def collate(samples, pad_idx=PAD, eos_idx=EOS, left_pad_source=True, left_pad_target=False):
    if not samples:
        return {}

    def merge(key, left_pad, move_eos_to_beginning=False):
        return collate_tokens([s[key] for s in samples], pad_idx, eos_idx, left_pad, move_eos_to_beginning)

    ids = torch.tensor([s["id"] for s in samples], dtype=torch.long)
    src_lengths, order = torch.tensor([s["source"].numel() for s in samples]).sort(descending=True)
    src_tokens = merge("source", left_pad_source).index_select(0, order)
    target = merge("target", left_pad_target).index_select(0, order)
    prev_output_tokens = merge("target", left_pad_target, move_eos_to_beginning=True).index_select(0, order)
    return {
        "id": ids.index_select(0, order),
        "nsentences": len(samples),
        "ntokens": sum(s["target"].numel() for s in samples),
        "net_input": {"src_tokens": src_tokens, "src_lengths": src_lengths,
                      "prev_output_tokens": prev_output_tokens},
        "target": target,
    }


class LanguagePairLike(Dataset):
    def __init__(self, src: TokenArray, tgt: TokenArray, shuffle: bool = True):
        self.src, self.tgt = src, tgt
        self.src_sizes, self.tgt_sizes = src.sizes, tgt.sizes
        self.shuffle = shuffle

    def __len__(self):
        return len(self.src)

    def __getitem__(self, index):
        return {"id": index, "source": self.src[index], "target": self.tgt[index]}

    def collater(self, samples):
        return collate(samples)

    def num_tokens(self, index):
        return max(self.src_sizes[index], self.tgt_sizes[index])

    def ordered_indices(self):
        indices = np.random.permutation(len(self)) if self.shuffle else np.arange(len(self))
        indices = indices[np.argsort(self.tgt_sizes[indices], kind="mergesort")]
        return indices[np.argsort(self.src_sizes[indices], kind="mergesort")]


def batch_by_size(dataset: LanguagePairLike, max_tokens: int = 1_024) -> list:
    """Cut the ordered indices into batches whose padded size stays within max_tokens."""
    batches, batch, longest = [], [], 0
    for idx in dataset.ordered_indices():
        longest_if_added = max(longest, int(dataset.num_tokens(idx)))
        if batch and longest_if_added * (len(batch) + 1) > max_tokens:
            batches.append(batch)
            batch, longest_if_added = [], int(dataset.num_tokens(idx))
        batch.append(int(idx))
        longest = longest_if_added
    if batch:
        batches.append(batch)
    return batches


def make_loader():
    src_prefix, tgt_prefix = write_corpus(scratch())
    dataset = LanguagePairLike(TokenArray(src_prefix), TokenArray(tgt_prefix))
    batches = batch_by_size(dataset)
    np.random.default_rng(7).shuffle(batches)  # fairseq shuffles the batches for each epoch
    return DataLoader(dataset, batch_sampler=batches, collate_fn=dataset.collater, num_workers=2)
