"""Records decoded by native code (ctypes here, a C extension in real life) that trusts
the offset in each file's header; one header is damaged."""
import ctypes
import struct
import tempfile
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset

FOLDER = Path(tempfile.gettempdir()) / "clinic-doctor-data" / "records"
SIDE = 16


def write_records(folder: Path, count: int = 96, damaged: int = 40) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        offset = 8 if i != damaged else 1 << 40  # a flipped bit puts the pixels a terabyte away
        (folder / f"img_{i:05d}.rec").write_bytes(struct.pack("<II", offset & 0xFFFFFFFF, offset >> 32)
                                                  + bytes([i % 256]) * SIDE * SIDE)


def decode(blob: bytes) -> torch.Tensor:
    low, high = struct.unpack_from("<II", blob)
    buffer = ctypes.create_string_buffer(blob, len(blob))
    pixels = ctypes.string_at(ctypes.addressof(buffer) + (high << 32 | low), SIDE * SIDE)
    return torch.frombuffer(bytearray(pixels), dtype=torch.uint8).view(SIDE, SIDE)


class RecordDataset(Dataset):
    def __init__(self, folder):
        self.paths = sorted(Path(folder).glob("*.rec"))

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        return decode(self.paths[index].read_bytes())


def make_loader():
    if not (FOLDER / "img_00095.rec").exists():
        write_records(FOLDER)
    return DataLoader(RecordDataset(FOLDER), batch_size=16, num_workers=2)
