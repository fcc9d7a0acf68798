"""Each sample is a set of patches cut in parallel by a multiprocessing.Pool made inside
__getitem__: in a DataLoader worker, a daemonic process, the pool cannot start
("daemonic processes are not allowed to have children").

Source: pytorch/pytorch issue https://github.com/pytorch/pytorch/issues/15950 (the daemonic
processes assertion met from DataLoader workers) and the pool pattern of
ThilinaRajapakse/simpletransformers issue
https://github.com/ThilinaRajapakse/simpletransformers/issues/1247 (with Pool(n) as p, in code
that runs in a daemonic process).
Faulty: scenario 17 (a process pool in a worker), found without the probe too.
"""
from multiprocessing import Pool

import torch
from torch.utils.data import DataLoader, Dataset


def cut_patch(seed):
    return torch.rand(8, 8, generator=torch.Generator().manual_seed(seed))


class PatchedSlides(Dataset):
    def __len__(self):
        return 32

    def __getitem__(self, index):
        with Pool(2) as workers:
            patches = workers.map(cut_patch, range(index * 4, index * 4 + 4))
        return torch.stack(patches)


def make_loader():
    return DataLoader(PatchedSlides(), batch_size=4, num_workers=2)
