"""Keeps the path in the dataset and opens the file again in every worker from worker_init_fn,
replacing the handle the worker inherited before it reads anything: each worker reads through a
Python file object, a file offset and an h5py file of its own. The training process keeps its
own handle for the num_workers=0 pass. A fix: open per worker, done at the worker's start.
"""
import sys
import tempfile
from pathlib import Path

import h5py
import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info

from _hdf5_file import SAMPLES, write_samples

EPOCHS = 3


def open_hdf5(path):
    # h5py reads the file with this object's seek() and read(), its "fileobj" driver.
    return h5py.File(open(path, "rb"), "r")


class HDF5Images(Dataset):
    def __init__(self, path):
        self.path = path
        self.file = open_hdf5(path)  # the training process's own; each worker replaces it (reopen)

    def reopen(self):
        self.file = open_hdf5(self.path)  # a new file object: its own offset, not the parent's

    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        return index, torch.from_numpy(self.file["images"][index])


def reopen_in_worker(worker_id):
    get_worker_info().dataset.reopen()


def one_epoch(dataset, num_workers):
    options = {"multiprocessing_context": "fork", "worker_init_fn": reopen_in_worker} if num_workers else {}
    loader = DataLoader(dataset, batch_size=32, shuffle=True, num_workers=num_workers,
                        generator=torch.Generator().manual_seed(0), **options)
    return {i: image for indices, images in loader for i, image in zip(indices.tolist(), images)}


def main(dataset_class=HDF5Images, num_workers=2):
    with tempfile.TemporaryDirectory() as folder:
        dataset = dataset_class(write_samples(Path(folder) / "train.h5"))
        oracle = one_epoch(dataset, num_workers=0)
        # The mix-up needs both workers inside a read at once; on a busy machine a whole
        # epoch can pass without that, as a whole training run never does.
        for epoch in range(1, EPOCHS + 1):
            seen = one_epoch(dataset, num_workers)
            wrong = sum(not torch.equal(seen[i], oracle[i]) for i in oracle)
            if wrong:
                break
    print(f"metric wrong_samples={wrong}")
    print(f"metric epochs_read={epoch}")
    if wrong:
        sys.exit(f"{wrong} of {SAMPLES} samples differ from what num_workers=0 read (epoch {epoch}; bound: 0)")
    print(f"all {SAMPLES} samples equal what num_workers=0 read, in each of {EPOCHS} epochs")


if __name__ == "__main__":
    main()
