"""Scenario 11, second remedy: keep the inherited file, but read it by position.

    python scenarios/11_shared_file_handle/fixed_pread.py

os.pread() takes the offset as an argument and neither reads nor moves the
shared one, so the workers may go on sharing the descriptor opened in __init__.
Expect: every sample matches its checksum.
"""
import os

import torch

from broken import RECORD_BYTES, RecordFileDataset, main


class PositionalReadDataset(RecordFileDataset):
    def __getitem__(self, index):
        # FIX: one system call with its own offset: no shared position to race on.
        record = os.pread(self.file.fileno(), RECORD_BYTES, index * RECORD_BYTES)
        return index, torch.frombuffer(bytearray(record), dtype=torch.uint8)


if __name__ == "__main__":
    main(PositionalReadDataset)
