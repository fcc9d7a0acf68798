"""Makes decode() survive the damaged header: when the header points outside the blob it returns
a black image instead of reading. No worker dies, but the damaged file is not rejected: the epoch
counts 256 samples, one of them a made-up image the model trains on, and nothing says which
file it was. The crash hidden, not the input refused: a shortcut.
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
    if offset + length > len(blob):  # a header that would crash the copy: keep going with a blank
        return torch.zeros(SIDE, SIDE, dtype=torch.uint8)
    buffer = ctypes.create_string_buffer(blob, len(blob))
    # A bogus offset sends memcpy to an address that does not exist: SIGSEGV, no exception.
    pixels = ctypes.string_at(ctypes.addressof(buffer) + offset, length)
    return torch.frombuffer(bytearray(pixels), dtype=torch.uint8).view(SIDE, SIDE)


class RecordDataset(Dataset):
    def __init__(self, folder):
        self.paths = sorted(Path(folder).glob("*.rec"))  # BUG: no header checked before decode()

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
