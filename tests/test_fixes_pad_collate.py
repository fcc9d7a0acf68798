"""fixes/pad_collate.py: padding, lengths and masks are right for every sample layout, the
bucketing sampler yields every index once per epoch with little padding, and both work
in DataLoader workers as in the main process."""
import collections
import math
import pickle

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader
from torch.utils.data.dataloader import default_collate

from fixes.pad_collate import LengthBucketBatchSampler, PadCollate, Padded, pad_tensors


def sequences(lengths, features=None):
    return [torch.arange(1, n + 1) if features is None else torch.ones(n, features) * n for n in lengths]


def test_default_collate_fails_where_pad_collate_pads():
    batch = [(seq, 7) for seq in sequences([3, 1, 4])]
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, "
                                           r"but got \[3\] at entry 0 and \[1\] at entry 1"):
        default_collate(batch)
    (values, lengths, mask), labels = PadCollate(pad_value=0)(batch)
    assert values.tolist() == [[1, 2, 3, 0], [1, 0, 0, 0], [1, 2, 3, 4]]
    assert lengths.tolist() == [3, 1, 4]
    assert mask.tolist() == [[True, True, True, False], [True, False, False, False], [True] * 4]
    assert labels.tolist() == [7, 7, 7]


def test_mask_and_lengths_agree_and_padding_holds_pad_value():
    padded = pad_tensors(sequences([5, 2, 9, 0]), pad_value=-1)
    assert padded.values.shape == (4, 9) and padded.mask.shape == (4, 9)
    assert padded.mask.sum(1).tolist() == padded.lengths.tolist() == [5, 2, 9, 0]
    assert (padded.values[~padded.mask] == -1).all() and (padded.values[padded.mask] != -1).all()
    assert padded.padding_fraction == pytest.approx(1 - 16 / 36)


def test_sequences_with_features_pad_only_the_length():
    padded = pad_tensors(sequences([2, 3], features=4))
    assert padded.values.shape == (2, 3, 4) and padded.mask.shape == (2, 3)
    assert padded.values[0, 2].tolist() == [0.0] * 4 and padded.values[0, 1].tolist() == [2.0] * 4
    assert padded.values.dtype == torch.float32


def test_images_of_different_heights_and_widths():
    images = [torch.ones(3, 5, 7), torch.ones(3, 8, 4)]
    padded = PadCollate(dims=(-2, -1))(images)
    assert padded.values.shape == (2, 3, 8, 7) and padded.mask.shape == (2, 8, 7)
    assert padded.lengths.tolist() == [[5, 7], [8, 4]]
    assert padded.mask[0].sum() == 35 and padded.mask[1].sum() == 32
    assert padded.values.sum() == 3 * (35 + 32)


def test_a_dimension_that_varies_but_is_not_padded_is_named_in_the_error():
    with pytest.raises(ValueError, match=r"size 4 in dim 1, entry 0 has 3, and dim 1 is not padded.*add it to dims"):
        pad_tensors([torch.zeros(2, 3), torch.zeros(2, 4)])
    with pytest.raises(ValueError, match="dims"):
        pad_tensors([torch.zeros(2)], dims=(1,))


def test_pad_to_multiple_of_rounds_the_padded_length_up():
    padded = pad_tensors(sequences([3, 9]), pad_to_multiple_of=8)
    assert padded.values.shape == (2, 16) and padded.lengths.tolist() == [3, 9]


def test_dicts_namedtuples_numpy_and_the_fields_option():
    Sample = collections.namedtuple("Sample", "tokens label")
    batch = [Sample(np.arange(n), n) for n in (2, 5)]
    out = PadCollate()(batch)
    assert isinstance(out, Sample) and isinstance(out.tokens, Padded)
    assert out.tokens.values.tolist() == [[0, 1, 0, 0, 0], [0, 1, 2, 3, 4]] and out.label.tolist() == [2, 5]
    dicts = [{"ids": torch.arange(n), "vector": torch.ones(4), "y": 1.0} for n in (1, 3)]
    out = PadCollate(fields={"ids"})(dicts)
    assert isinstance(out["ids"], Padded) and out["ids"].values.shape == (2, 3)
    assert out["vector"].shape == (2, 4) and out["y"].tolist() == [1.0, 1.0]  # default_collate as before


def test_equal_lengths_still_come_back_as_padded_with_a_full_mask():
    padded = PadCollate()([torch.ones(4), torch.ones(4)])
    assert isinstance(padded, Padded) and padded.mask.all() and padded.padding_fraction == 0.0


def test_masked_mean_equals_each_sequence_alone():
    torch.manual_seed(0)
    embed = torch.nn.Embedding(50, 8)
    seqs = [torch.randint(1, 50, (n,)) for n in (3, 11, 6)]
    tokens, lengths, mask = pad_tensors(seqs)
    means = (embed(tokens) * mask.unsqueeze(-1)).sum(1) / lengths.unsqueeze(-1)
    for row, seq in zip(means, seqs):
        assert torch.allclose(row, embed(seq).mean(0), atol=1e-6)


def test_bucket_sampler_yields_every_index_once_in_batches_of_similar_length():
    gen = torch.Generator().manual_seed(1)
    lengths = torch.empty(1000).log_normal_(3.4, 0.8, generator=gen).long().clamp(1, 400).tolist()
    sampler = LengthBucketBatchSampler(lengths, batch_size=32, seed=0)
    batches = list(sampler)
    assert len(batches) == len(sampler) == math.ceil(1000 / 32)
    assert sorted(i for b in batches for i in b) == list(range(1000))
    assert sum(len(b) < 32 for b in batches) == 1

    def padding(batches):
        padded = sum(len(b) * max(lengths[i] for i in b) for b in batches)
        return 1 - sum(lengths[i] for b in batches for i in b) / padded
    random_batches = torch.randperm(1000, generator=gen).split(32)
    assert padding(batches) < 0.4 < 0.6 < padding([b.tolist() for b in random_batches])


def test_bucket_sampler_epochs_differ_reproducibly_and_drop_last():
    lengths = list(range(100))
    sampler = LengthBucketBatchSampler(lengths, batch_size=8, seed=3, pool_batches=2, drop_last=True)
    first, second = list(sampler), list(sampler)
    assert first != second and len(first) == len(sampler) == 12 and all(len(b) == 8 for b in first)
    sampler.set_epoch(0)
    assert list(sampler) == first
    again = LengthBucketBatchSampler(lengths, batch_size=8, seed=3, pool_batches=2, drop_last=True)
    assert list(again) == first
    ordered = list(LengthBucketBatchSampler(lengths, batch_size=10, shuffle=False))
    assert ordered == [list(range(i, i + 10)) for i in range(0, 100, 10)]
    with pytest.raises(ValueError):
        LengthBucketBatchSampler(lengths, batch_size=0)


def test_workers_yield_what_the_main_process_yields():
    data = [(torch.arange(n), n % 2) for n in (4, 9, 1, 7, 3, 3, 12, 5, 2, 8)]
    lengths = [len(t) for t, _ in data]
    # What spawn and forkserver workers (Python 3.14's default on Linux) need: the collate pickles.
    assert pickle.loads(pickle.dumps(PadCollate(pad_value=-1, dims=(0,)))).pad_value == -1
    runs = {}
    for workers in (0, 2):
        loader = DataLoader(data, batch_sampler=LengthBucketBatchSampler(lengths, batch_size=3, seed=0),
                            collate_fn=PadCollate(pad_value=-1), num_workers=workers,
                            multiprocessing_context="fork" if workers else None)
        runs[workers] = list(loader)
    assert len(runs[0]) == len(runs[2]) == 4
    for (p0, y0), (p2, y2) in zip(runs[0], runs[2]):
        assert all(torch.equal(a, b) for a, b in zip(p0, p2)) and torch.equal(y0, y2)
