"""An attendee's fix of 18 that is not ours: the file opened on first use, once per process id.

Scenario 18, broken: an h5py.File opened in __init__, read by forked workers through one handle.

    python scenarios/18_hdf5_opened_in_init/broken.py

1,024 small images in one HDF5 file (chunked, gzip), opened with h5py from a
Python file object, as files from fsspec, s3fs or an archive are.  The script
reads one epoch with num_workers=0 (the oracle), then the same epoch with two
forked workers, up to three times, and compares every sample.  broken.py opens the file once, in
__init__: expect an error raised by h5py inside a worker (KeyError or OSError,
"Caught ... in DataLoader worker process N"), or, in the runs where h5py
raises nothing, samples whose pixels differ from the oracle's, counted.
fixed.py opens it once per worker, on first use: every sample equals the
oracle's.  (With a path instead of a file object this h5py is safe: see README.)
"""
import os
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
        self.path, self.file, self.opened_by = path, None, None  # FIX: opened lazily, by each process

    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        if self.opened_by != os.getpid():
            self.file, self.opened_by = open_hdf5(self.path), os.getpid()
        return index, torch.from_numpy(self.file["images"][index])


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
