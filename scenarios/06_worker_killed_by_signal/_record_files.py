"""The little binary format scenario 06 decodes: one 32x32 grey image per file.
Imported by its scripts and tests; not run on its own.

    header (16 bytes): magic b"REC1" · payload length (uint32) · payload offset (uint64)
    payload:           SIDE * SIDE bytes of pixels, at that offset

`write_record_files` writes a folder of them, one of which, img_00137.rec, has its header
corrupted the way real files get corrupted: one flipped bit, here bit 52 of the offset
field, which turns 16 into 4503599627370512.  The workshop grader's seed moves the damage
to another file (scenarios/synthetic_data.py), so that no fix can name the file instead of
checking every header.
"""
import struct
from pathlib import Path

import numpy as np

from scenarios.synthetic_data import grading_rng

HEADER = struct.Struct("<4sIQ")
MAGIC = b"REC1"
SIDE = 32


def read_header(blob: bytes) -> tuple[int, int]:
    """(payload offset, payload length), exactly as the file states them."""
    _magic, length, offset = HEADER.unpack_from(blob)
    return offset, length


def write_record_files(folder, count: int, seed: int = 0) -> list[Path]:
    """`count` (over 137) files in `folder`, one damaged: file 137, or where the grader's seed says."""
    rng = np.random.default_rng(seed)
    paths = []
    for index in range(count):
        pixels = rng.integers(0, 256, SIDE * SIDE, dtype=np.uint8).tobytes()
        path = Path(folder) / f"img_{index:05d}.rec"
        path.write_bytes(HEADER.pack(MAGIC, len(pixels), HEADER.size) + pixels)
        paths.append(path)
    moved = grading_rng()
    damage(paths[137 if moved is None else int(moved.integers(count))])
    return paths


def damage(path: Path) -> None:
    """Flip bit 52 of the file's payload offset."""
    blob = bytearray(Path(path).read_bytes())
    magic, length, offset = HEADER.unpack_from(blob)
    HEADER.pack_into(blob, 0, magic, length, offset ^ (1 << 52))
    Path(path).write_bytes(bytes(blob))
