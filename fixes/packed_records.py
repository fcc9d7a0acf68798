"""PackedRecords: a list of records that forked DataLoader workers can read
without copying it.  Fixes scenario 03 (copy-on-read memory growth).

A Python list of dicts is millions of separate objects, each with a reference
count that every read writes to; after `fork` each write copies the page it is
on into the worker, so a worker that reads the whole index ends up with a
private copy of it.  Here the records are pickled into one contiguous numpy
byte buffer plus an offsets array: two objects, whose pages a worker only
reads.  Each access unpickles a fresh copy of one record.  The same design as the
numpy serialized list of Yuxin Wu's "Demystify RAM usage in multi-process data loaders"
(https://ppwwyyxx.com/blog/2022/Demystify-RAM-Usage-in-Multiprocess-DataLoader/), with
reads through memoryviews, faster than numpy indexing.  Under spawn or forkserver each
worker receives its own copy of the buffer (a pickle); detectron2 keeps the buffer in a
torch tensor instead, which torch moves to /dev/shm for them, shared but charged to a
/dev/shm that containers often keep small (scenario 04).

    index = PackedRecords(list_of_dicts)   # once, in the main process
    record = index[i]                      # in the workers: a new dict each time
"""
from __future__ import annotations

import pickle
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np


class PackedRecords(Sequence):
    """An immutable, list-like store of picklable records in a single buffer."""

    def __init__(self, records: Iterable[Any]):
        blobs = [pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL) for record in records]
        self._offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
        np.cumsum([len(blob) for blob in blobs], out=self._offsets[1:])
        self._buffer = np.frombuffer(b"".join(blobs), dtype=np.uint8)
        self._views()

    def _views(self) -> None:
        # Memoryviews of the two arrays: indexing one gives a plain int and slicing one makes
        # no new array, so a read is faster than through numpy scalars and array slices
        # (scenarios/clinic/bench/suite.py compares the two).  Remade, not pickled, for spawned workers.
        self._ends, self._bytes = memoryview(self._offsets), memoryview(self._buffer)

    def __getstate__(self) -> dict:
        return {"_offsets": self._offsets, "_buffer": self._buffer}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._views()

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, index):
        if type(index) is not int or not 0 <= index < len(self._ends) - 1:
            if isinstance(index, slice):
                return [self[i] for i in range(*index.indices(len(self)))]
            index = self._checked(index)
        return pickle.loads(self._bytes[self._ends[index]:self._ends[index + 1]])

    def _checked(self, index) -> int:
        """The slow path: a numpy integer or a negative index as a plain index, or an
        error that says what is wrong."""
        if not isinstance(index, (int, np.integer)):
            raise TypeError(f"PackedRecords indices must be integers or slices, not {type(index).__name__}")
        index = int(index)
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"PackedRecords index {index} out of range for {len(self)} records")
        return index

    @property
    def nbytes(self) -> int:
        """Bytes held: the buffer plus the offsets."""
        return self._buffer.nbytes + self._offsets.nbytes

    def __repr__(self) -> str:
        return f"PackedRecords({len(self)} records, {self.nbytes / 2**20:.1f} MB)"
