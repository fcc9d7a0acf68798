"""The little binary format scenario 06 decodes: one 32x32 grey image per file.
Imported by its scripts and tests; not run on its own.

    header (16 bytes): magic b"REC1" · payload length (uint32) · payload offset (uint64)
    payload:           SIDE * SIDE bytes of pixels, at that offset

`write_record_files` writes a folder of them, with the header of the files named
in `damaged` corrupted the way real files get corrupted: one flipped bit, here
bit 52 of the offset field, which turns 16 into 4503599627370512.
"""
import struct
from pathlib import Path

import numpy as np

HEADER = struct.Struct("<4sIQ")
MAGIC = b"REC1"
SIDE = 32


def read_header(blob: bytes) -> tuple[int, int]:
    """(payload offset, payload length), exactly as the file states them."""
    _magic, length, offset = HEADER.unpack_from(blob)
    return offset, length


def write_record_files(folder, count: int, damaged=(), seed: int = 0) -> list[Path]:
    rng = np.random.default_rng(seed)
    paths = []
    for index in range(count):
        offset = HEADER.size | (1 << 52 if index in damaged else 0)
        pixels = rng.integers(0, 256, SIDE * SIDE, dtype=np.uint8).tobytes()
        path = Path(folder) / f"img_{index:05d}.rec"
        path.write_bytes(HEADER.pack(MAGIC, len(pixels), offset) + pixels)
        paths.append(path)
    return paths
