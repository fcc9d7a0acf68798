"""Scenario 11, third remedy: each worker opens the file again, on its first read.

    python scenarios/11_shared_file_handle/fixed_lazy_open.py

A second open() makes a new open file description with an offset of its own;
seek() and read() are then safe.  Checking the pid, rather than "is it open
yet", also catches the handle that __init__ opened in the parent.
Expect: every sample matches its checksum.
"""
import os

from broken import RecordFileDataset, main


class LazyOpenDataset(RecordFileDataset):
    def __getitem__(self, index):
        # FIX: a new open() in each process: a description, and an offset, of its own.
        if getattr(self, "opened_in_pid", None) != os.getpid():
            self.file, self.opened_in_pid = open(self.file.name, "rb"), os.getpid()
        return super().__getitem__(index)


if __name__ == "__main__":
    main(LazyOpenDataset)
