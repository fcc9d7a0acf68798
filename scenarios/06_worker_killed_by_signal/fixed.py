"""Scenario 06, fixed: every header is checked before native code trusts it.

    python scenarios/06_worker_killed_by_signal/fixed.py

Expect: "skipped img_00137.rec: header puts 1024 bytes at offset …", then the
whole epoch: 255 of 256 samples read, no worker dies, exit status 0.
"""
import ctypes
import tempfile
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset

from fixes.native_crash import check_span, keep_valid
from record_files import SIDE, read_header, write_record_files

FILES = 256
DAMAGED = {137}  # one file in the folder has a flipped bit in its header


def decode(blob: bytes) -> torch.Tensor:
    """Stands in for a C extension's image decoder: it believes the header."""
    length, offset = read_header(blob)
    buffer = ctypes.create_string_buffer(blob, len(blob))
    # BUG: offset and length come from the file and reach native code unchecked;
    # a damaged header makes memcpy read an address that does not exist: SIGSEGV.
    pixels = ctypes.string_at(ctypes.addressof(buffer) + offset, length)
    return torch.frombuffer(bytearray(pixels), dtype=torch.uint8).view(SIDE, SIDE)


def check_record(path):
    blob = path.read_bytes()
    length, offset = read_header(blob)
    check_span(offset, length, available=len(blob), source=path.name)


class RecordDataset(Dataset):
    def __init__(self, folder):
        # FIX: reject a file whose header points outside itself, before any worker decodes it.
        self.paths, rejected = keep_valid(sorted(Path(folder).glob("*.rec")), check_record)
        for path, reason in rejected:
            print(f"skipped {reason}")

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        return decode(self.paths[index].read_bytes())


def main(dataset_class=RecordDataset, worker_init_fn=None):
    with tempfile.TemporaryDirectory() as folder:
        write_record_files(folder, FILES, damaged=DAMAGED)
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
