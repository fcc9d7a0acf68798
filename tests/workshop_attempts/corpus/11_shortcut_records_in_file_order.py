"""Drops the seek: each worker reads the next record from the shared offset (os.read, one system
call, so two reads never overlap), looks up which record it got in the file's own CRC-32 table
and returns that index. Every record comes once, with its own bytes and checksum, but not the
one the sampler asked for: the shuffle is gone (the epoch runs in file order) and the shared
offset is still what decides what a worker reads. A wrong record with unique bytes: a shortcut.
"""
import os
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from _record_file import RECORD_BYTES, evict_from_page_cache, write_records

RECORDS = 12_000


class RecordFileDataset(Dataset):
    def __init__(self, path, count):
        self.file = open(path, "rb")  # BUG: forked copies of it share one kernel file offset
        self.count = count
        # The file ends with every record's CRC-32: which record a read got, whatever the offset.
        with open(path, "rb") as index_file:
            index_file.seek(count * RECORD_BYTES)
            crcs = np.frombuffer(index_file.read(4 * count), dtype=np.uint32)
        self.record_of = {int(crc): i for i, crc in enumerate(crcs)}

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        # No seek to race with: the shared offset hands each read the next record, once.
        record = os.read(self.file.fileno(), RECORD_BYTES)
        index = self.record_of[zlib.crc32(record)]
        return index, torch.frombuffer(bytearray(record), dtype=torch.uint8)


def main(dataset_class=RecordFileDataset, cold_cache=True, num_workers=2, worker_init_fn=None):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "train.records"
        checksums = write_records(path, RECORDS)
        if cold_cache:  # the data set is not in RAM: first epoch, or bigger than memory
            evict_from_page_cache(path)
        loader = DataLoader(dataset_class(path, RECORDS), batch_size=64, shuffle=True,
                            num_workers=num_workers, worker_init_fn=worker_init_fn,
                            multiprocessing_context="fork")
        started, wrong = time.perf_counter(), 0
        for indices, records in loader:
            for index, record in zip(indices.tolist(), records):
                wrong += int(zlib.crc32(record.numpy()) != checksums[index])
        print(f"metric epoch_s={time.perf_counter() - started:.2f}")
    print(f"metric wrong_samples={wrong}")
    if wrong:
        sys.exit(f"{wrong} of {RECORDS} samples failed their checksum: "
                 f"they hold another record's bytes (bound: 0)")
    print(f"all {RECORDS} samples match their checksums")


if __name__ == "__main__":
    main()
