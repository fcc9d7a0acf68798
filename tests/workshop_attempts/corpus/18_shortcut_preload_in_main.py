"""Reads the whole image array into memory in __init__, in the training process, closes the
file and serves samples from that copy: the workers never touch the HDF5 handle, so nothing
can race. It works because this file is 1,024 tiny images; the dataset still cannot read a
file per worker, and a real one (larger than RAM, or a stream) cannot be loaded up front.
A cache made in the main process: a shortcut.
"""
import sys
import tempfile
from pathlib import Path

import h5py
import torch
from torch.utils.data import DataLoader, Dataset

from _hdf5_file import SAMPLES, write_samples

EPOCHS = 3


def open_hdf5(path):
    # h5py reads the file with this object's seek() and read(), its "fileobj" driver.
    return h5py.File(open(path, "rb"), "r")


class HDF5Images(Dataset):
    def __init__(self, path):
        self.file = open_hdf5(path)  # BUG: one handle, and one file offset, shared by every forked worker
        self.images = self.file["images"][:]  # everything, once, before any worker exists
        self.file.close()

    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        return index, torch.from_numpy(self.images[index])


def one_epoch(dataset, num_workers):
    options = {"multiprocessing_context": "fork"} if num_workers else {}
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
