"""Features and targets as two tensors in torch's own TensorDataset, shuffled, read by two
workers: the commonest tutorial loader.  Its workers read slices of two tensors and write no
Python object's reference count, whatever their memory does during the first batches.

Source: Yc174/pytorch_learning, batch_train.py (Data.TensorDataset(x, y) with num_workers=2),
commit d05433ee2491861739a61bc82ee9889b6142e4d6
https://github.com/Yc174/pytorch_learning/blob/d05433ee2491861739a61bc82ee9889b6142e4d6/batch_train.py
Well built: no risk expected (scenario 03 never for a dataset of tensors).
Gathered after the doctor's rules of issue 27 were written.
"""
import torch
from torch.utils.data import DataLoader, TensorDataset


def make_loader():
    generator = torch.Generator().manual_seed(1)
    features = torch.randn(20_000, 64, generator=generator)
    targets = torch.randint(0, 10, (20_000,), generator=generator)
    return DataLoader(TensorDataset(features, targets), batch_size=64, shuffle=True, num_workers=2)
