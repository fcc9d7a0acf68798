"""PackedRecords: a list of records that forked DataLoader workers can read
without copying it.  Fixes scenario 03 (copy-on-read memory growth).

A Python list of dicts is millions of separate objects, each with a reference
count that every read writes to; after `fork` each write copies the page it is
on into the worker, so a worker that reads the whole index ends up with a
private copy of it.  Here the records are pickled into one contiguous numpy
byte buffer plus an offsets array: two objects, whose pages a worker only
reads.  Each access unpickles a fresh copy of one record.

    index = PackedRecords(list_of_dicts)   # once, in the main process
    record = index[i]                      # in the workers: a new dict each time
"""
from __future__ import annotations

import pickle
from typing import Any, Iterable, Sequence

import numpy as np


class PackedRecords(Sequence):
    """An immutable, list-like store of picklable records in a single buffer."""

    def __init__(self, records: Iterable[Any]):
        blobs = [pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL) for record in records]
        self._offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
        np.cumsum([len(blob) for blob in blobs], out=self._offsets[1:])
        self._buffer = np.frombuffer(b"".join(blobs), dtype=np.uint8)

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if not isinstance(index, (int, np.integer)):
            raise TypeError(f"PackedRecords indices must be integers or slices, not {type(index).__name__}")
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"PackedRecords index {index} out of range for {len(self)} records")
        start, end = self._offsets[index], self._offsets[index + 1]
        return pickle.loads(self._buffer[start:end])

    @property
    def nbytes(self) -> int:
        """Bytes held: the buffer plus the offsets."""
        return self._buffer.nbytes + self._offsets.nbytes

    def __repr__(self) -> str:
        return f"PackedRecords({len(self)} records, {self.nbytes / 2**20:.1f} MB)"
