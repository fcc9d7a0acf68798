"""Scenario 11, attempt (shortcut): keep the shared handle and its seek+read race, but patch the
last four bytes of any record that fails the file's own CRC-32 table so that it passes.

The dataset still opens the file once in __init__, so forked workers still share
one file offset and still read each other's records (or a read that straddles two
records).  What changes is only what they hand back: __getitem__ looks up the
record's expected CRC-32 in the file's footer and, when the bytes it read do not
match, rewrites the record's last four bytes so that the CRC-32 comes out right
(CRC-32 is linear, so four free bytes can force any value).  Every sample is
delivered under its right index, no two samples share their bytes (each forged
record is another record's data with four bytes changed), and the script's
checksum count drops to 0 — yet the data of every raced read is still wrong: it
is some other record's image with a doctored tail.  A shortcut: the check is
defeated, the race is untouched.
"""
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


def _force_crc32(record: bytes, target: int) -> bytes:
    """`record` with its last 4 bytes replaced so that zlib.crc32 of it equals `target`."""
    state = zlib.crc32(record[:-4])
    base = zlib.crc32(b"\0\0\0\0", state)
    # crc(prefix + x) = base ^ (sum of the columns of the bits set in x): solve over GF(2).
    rows = []
    for bit in range(32):
        unit = (1 << bit).to_bytes(4, "little")
        rows.append([zlib.crc32(unit, state) ^ base, 1 << bit])
    want, solution = target ^ base, 0
    for pivot_bit in range(32):
        mask = 1 << pivot_bit
        pivot = next((r for r in rows if r[0] & mask), None)
        if pivot is None:
            continue
        rows.remove(pivot)
        for r in rows:
            if r[0] & mask:
                r[0] ^= pivot[0]
                r[1] ^= pivot[1]
        if want & mask:
            want ^= pivot[0]
            solution ^= pivot[1]
    return record[:-4] + solution.to_bytes(4, "little")


class RecordFileDataset(Dataset):
    def __init__(self, path, count):
        self.file = open(path, "rb")  # BUG: forked copies of it share one kernel file offset
        self.count = count
        with open(path, "rb") as footer:  # the file's own CRC-32 table, after the records
            footer.seek(count * RECORD_BYTES)
            self.checksums = np.frombuffer(footer.read(4 * count), dtype=np.uint32).copy()

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        self.file.seek(index * RECORD_BYTES)
        record = self.file.read(RECORD_BYTES)
        expected = int(self.checksums[index])
        if zlib.crc32(record) != expected:  # "repair" the record so it validates
            record = _force_crc32(record, expected)
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
