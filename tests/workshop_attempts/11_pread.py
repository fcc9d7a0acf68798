"""An attendee's fix of 11 that is not ours: os.pread on one descriptor, no offset shared.

Scenario 11, broken: forked workers share one file offset and read each other's records.

    python scenarios/11_shared_file_handle/broken.py

A dataset of 12,000 fixed-size records in one file, each written with its
CRC-32, read by two forked workers on a cold page cache.  broken.py opens the
file once, in __init__, and seeks and reads in __getitem__: expect the epoch
to run to its end without an error or a warning, yet dozens of samples fail
their checksum (another record's bytes), and the script fails on the count.
fixed.py opens nothing in __init__ and reads by position through a descriptor
of each worker's own: expect every sample to match its checksum.  (Why a
quick test on a warm page cache can pass: see README.)
"""
import os
import sys
import tempfile
import time
import zlib
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset

from _record_file import RECORD_BYTES, evict_from_page_cache, write_records

RECORDS = 12_000


class RecordFileDataset(Dataset):
    def __init__(self, path, count):
        self.fd = os.open(path, os.O_RDONLY)  # FIX: read by position (pread): no shared offset to move
        self.count = count

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        record = os.pread(self.fd, RECORD_BYTES, index * RECORD_BYTES)
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
