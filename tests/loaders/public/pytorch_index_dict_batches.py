"""A dataset that returns a dict holding one index per sample, read one sample per batch by a
worker, with a loop that appends every batch's tensor to a list.  Each kept tensor came from the
worker through shared memory and keeps its file descriptor open in the training process, so the
list runs the process out of descriptors ("Too many open files") long before memory matters.

Source: pytorch/pytorch issue https://github.com/pytorch/pytorch/issues/11201 ("Too many open
files error": testSet returning {"index": index}, DataLoader(batch_size=1, num_workers=1), and
index.append(sample['index'])); its PR https://github.com/pytorch/pytorch/pull/11626.
Faulty: scenario 08 (one tiny shared tensor per batch, kept by the loop).
"""
from torch.utils.data import DataLoader, Dataset


class IndexSet(Dataset):
    def __init__(self, length: int = 300):
        self.length = length   # a million in the issue; a few hundred here

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        return {"index": index}


def make_loader():
    return DataLoader(IndexSet(), batch_size=1, num_workers=1)
