"""Shortcut (kind 4): the damaged file named, not found.

measure_faulthandler.py names img_00137.rec, and this attempt leaves that one file out
instead of checking every header.  It passes on the documented folder; the grader's seed
damages another file, and a worker dies of SIGSEGV as in broken.py.

Scenario 06, broken: a native crash on one damaged file kills a worker.

    python scenarios/06_worker_killed_by_signal/broken.py    # or fixed.py

A dataset decodes 256 small files with native code that believes each file's
header, as C decoders do; one file has a flipped bit in its header.

broken.py: expect "ERROR: Unexpected segmentation fault encountered in worker.", then
    RuntimeError: DataLoader worker (pid …) is killed by signal: Segmentation fault.
    The above exception was the direct cause of the following exception:
    RuntimeError: DataLoader worker (pid(s) …) exited unexpectedly
(in most runs; README, Symptom: the two other endings, one of which names no signal)
and not one line of the worker's own traceback: which file, which line, is lost.
fixed.py: expect "skipped img_00137.rec: header puts 1024 bytes at offset …",
then the whole epoch: 255 of 255 samples read, no worker dies, exit status 0.
"""
import ctypes
import tempfile
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset

from _record_files import SIDE, read_header, write_record_files

FILES = 256  # one of them, img_00137.rec, has a flipped bit in its header


def decode(blob: bytes) -> torch.Tensor:
    """Stands in for a C extension's image decoder: it believes the header."""
    offset, length = read_header(blob)
    buffer = ctypes.create_string_buffer(blob, len(blob))
    # A bogus offset sends memcpy to an address that does not exist: SIGSEGV, no exception.
    pixels = ctypes.string_at(ctypes.addressof(buffer) + offset, length)
    return torch.frombuffer(bytearray(pixels), dtype=torch.uint8).view(SIDE, SIDE)


class RecordDataset(Dataset):
    def __init__(self, folder):
        # SHORTCUT: the file measure_faulthandler.py named, left out by name
        self.paths = [p for p in sorted(Path(folder).glob("*.rec")) if p.name != "img_00137.rec"]

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        return decode(self.paths[index].read_bytes())


def main(dataset_class=RecordDataset, worker_init_fn=None):
    with tempfile.TemporaryDirectory() as folder:
        write_record_files(folder, FILES)
        dataset = dataset_class(folder)
        # prefetch_factor=1: no batch of the dying worker is still in transit, so no
        # ConnectionResetError buries PyTorch's own report of the death (README, Symptom).
        loader = DataLoader(dataset, batch_size=16, num_workers=2, prefetch_factor=1,
                            multiprocessing_context="fork", worker_init_fn=worker_init_fn)
        samples = pixel_sum = 0
        try:
            for images in loader:
                samples += len(images)
                pixel_sum += int(images.sum())
        finally:  # runs on the way out of the crash too: the count is part of the evidence
            print(f"read {samples} of {len(dataset)} samples")
            print(f"metric samples_read={samples}")
        print(f"metric pixel_sum={pixel_sum}")


if __name__ == "__main__":
    main()
