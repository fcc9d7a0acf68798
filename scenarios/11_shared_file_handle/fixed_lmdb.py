"""Scenario 11, fixed (LMDB): nothing opened in __init__; each worker opens the environment on its first read.

    python scenarios/11_shared_file_handle/fixed_lmdb.py

broken_lmdb.py's dataset, with one change: the parent opens nothing, and each
worker opens its own environment the first time it reads, so its reader slots
carry its own pid and are given back when each transaction ends.  Reopening in
the worker the environment the parent opened is no way out: py-lmdb refuses a
second open of one environment in a process, and a forked worker inherits the
parent's (`lmdb.Error: The environment '…' is already open in this process.`).
Expect: every sample matches its checksum.
"""
import lmdb

from broken_lmdb import LmdbRecords, main


class LmdbRecordsPerWorker(LmdbRecords):
    def __init__(self, folder, count):
        # FIX: open nothing here, in the parent; each worker opens its own environment on its first read.
        self.folder, self.count, self.env = folder, count, None

    def __getitem__(self, index):
        if self.env is None:
            self.env = lmdb.open(self.folder, readonly=True)
        return super().__getitem__(index)


if __name__ == "__main__":
    main(LmdbRecordsPerWorker)
