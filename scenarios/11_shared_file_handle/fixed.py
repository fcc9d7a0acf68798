"""Scenario 11, fixed: each worker reads through a descriptor of its own, by position.

    python scenarios/11_shared_file_handle/fixed.py

Expect: the same cold-cache epoch, and every one of the 12,000 samples matches
the checksum written with its record.
"""
import sys
import tempfile
import time
import zlib
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset

from fixes.per_worker_file import PerWorkerFile
from record_file import RECORD_BYTES, evict_from_page_cache, write_records

RECORDS = 12_000


class RecordFileDataset(Dataset):
    def __init__(self, path, count):
        # FIX: open nothing here; each worker opens its own descriptor on first
        # read and reads by position (pread), so no offset is shared.
        self.file = PerWorkerFile(path)
        self.count = count

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        record = self.file.read_at(index * RECORD_BYTES, RECORD_BYTES)
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
