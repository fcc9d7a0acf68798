"""Scenario 11, broken (LMDB): forked workers read through the environment __init__ opened.

    python scenarios/11_shared_file_handle/broken_lmdb.py   # lmdb.ReadersFullError after about 125 samples
    python scenarios/11_shared_file_handle/fixed_lmdb.py    # every sample matches its checksum

broken.py's records, kept in an LMDB database as many image and feature data
sets are.  broken_lmdb.py opens the environment in __init__ and begins a read
transaction per sample in two forked workers.  Each such transaction takes a
slot in the reader table of LMDB's lock file, a table shared by every process,
and the slot is marked with the pid of the process that opened the
environment: the parent's.  A worker's slot is never freed, and after about
125 samples the table (max_readers=126 by default) is full: expect
`lmdb.ReadersFullError: mdb_txn_begin: MDB_READERS_FULL: Environment maxreaders
limit reached (Please use a larger Environment(max_readers=) parameter)`.  A
larger max_readers moves the failure, no more.  fixed_lmdb.py opens the
environment again in each worker, on its first read.
"""
import sys
import tempfile
import zlib

import lmdb
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from _record_file import RECORD_BYTES

RECORDS = 1_000


def write_lmdb(folder: str, count: int, seed: int = 0) -> np.ndarray:
    """`count` random records under the keys b"0", b"1", …; returns their CRC-32s."""
    records = np.random.default_rng(seed).integers(0, 256, size=(count, RECORD_BYTES), dtype=np.uint8)
    env = lmdb.open(folder, map_size=2 * count * RECORD_BYTES + 2**20)
    with env.begin(write=True) as txn:
        for index, record in enumerate(records):
            txn.put(b"%d" % index, record.tobytes())
    env.close()
    return np.array([zlib.crc32(record) for record in records], dtype=np.uint32)


class LmdbRecords(Dataset):
    def __init__(self, folder, count):
        self.folder, self.count = folder, count
        # BUG: opened in the parent; forked workers begin their transactions on this environment.
        self.env = lmdb.open(folder, readonly=True)

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        with self.env.begin() as txn:
            record = txn.get(b"%d" % index)
        return index, torch.frombuffer(bytearray(record), dtype=torch.uint8)


def main(dataset_class=LmdbRecords):
    with tempfile.TemporaryDirectory() as folder:
        checksums = write_lmdb(folder, RECORDS)
        loader = DataLoader(dataset_class(folder, RECORDS), batch_size=64, shuffle=True, num_workers=2,
                            multiprocessing_context="fork")
        wrong = 0
        for indices, records in loader:
            for index, record in zip(indices.tolist(), records):
                wrong += int(zlib.crc32(record.numpy()) != checksums[index])
    print(f"metric wrong_samples={wrong}")
    if wrong:
        sys.exit(f"{wrong} of {RECORDS} samples failed their checksum (bound: 0)")
    print(f"all {RECORDS} samples match their checksums")


if __name__ == "__main__":
    main()
