"""Keeps the one handle opened in __init__ and puts a multiprocessing.Lock, shared by the forked
workers, around every read, so that no two workers seek and read at once. The shared offset no
longer races, but each worker's copy of the BufferedReader under h5py still keeps its own read-ahead
buffer and its own idea of where the shared offset is, wrong as soon as the other worker has
moved it, and each worker's HDF5 library still parses from that: the handle is still shared.
The race serialised, not the handle made per worker: half a fix.
"""
import multiprocessing
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
        self.lock = multiprocessing.Lock()  # forked with the dataset: one lock for all the workers

    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        with self.lock:  # one worker at a time on the shared handle
            image = self.file["images"][index]
        return index, torch.from_numpy(image)


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
