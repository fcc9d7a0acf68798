"""PerWorkerFile (fixes scenario 11): exact positional reads, a private descriptor per process."""
import multiprocessing
import os
import pickle
import tempfile
import threading
import time
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from conftest import exit_code_of_child_forked_holding

from fixes import per_worker_file
from fixes.per_worker_file import PerWorkerFile

RECORD = 512
COUNT = 400
FORK = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
needs_fork = pytest.mark.skipif(FORK is None, reason="needs the fork start method (Linux)")


@pytest.fixture
def record_path():
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "records.bin"
        path.write_bytes(bytes(i % 251 for i in range(RECORD * COUNT)))
        yield path


def test_read_at_returns_exactly_the_bytes_at_the_offset(record_path):
    data = record_path.read_bytes()
    file = PerWorkerFile(record_path)
    for offset in (0, 1, RECORD * 7 + 3, len(data) - RECORD):
        assert file.read_at(offset, RECORD) == data[offset:offset + RECORD]
    assert file.read_at(5, 0) == b""
    file.close()


def test_read_past_the_end_says_what_happened(record_path):
    file = PerWorkerFile(record_path)
    with pytest.raises(EOFError, match=r"wanted 512 bytes at offset .* the file ends after 256"):
        file.read_at(RECORD * COUNT - 256, RECORD)
    with pytest.raises(ValueError, match="must be >= 0"):
        file.read_at(-1, RECORD)
    file.close()


def test_missing_file_is_reported_at_construction():
    with pytest.raises(FileNotFoundError, match="check the path the Dataset was given"):
        PerWorkerFile("/nonexistent/records.bin")


def test_nothing_is_opened_until_the_first_read(record_path):
    file = PerWorkerFile(record_path)
    assert "not opened in this process" in repr(file)
    fd = file.fileno()
    assert file.fileno() == fd  # opened once per process, then reused
    file.close()
    with pytest.raises(OSError):
        os.fstat(fd)
    assert file.read_at(0, 4) == record_path.read_bytes()[:4]  # reopens after close
    file.close()


def test_threads_reading_at_once_open_one_descriptor(record_path, monkeypatch):
    """Threads of one worker (a thread pool in __getitem__) all make their first read at the
    same instant: one descriptor must be opened, not one per thread (the others would leak)."""
    opened, real_open = [], os.open

    def slow_open(*args, **kwargs):  # widens the window between "not open yet" and "opened"
        time.sleep(0.05)
        fd = real_open(*args, **kwargs)
        opened.append(fd)
        return fd

    monkeypatch.setattr(os, "open", slow_open)
    file = PerWorkerFile(record_path)
    start, records = threading.Barrier(16), {}

    def read(index):
        start.wait()
        records[index] = file.read_at(index * RECORD, RECORD)

    threads = [threading.Thread(target=read, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    monkeypatch.undo()
    try:
        assert len(opened) == 1, f"{len(opened)} descriptors opened by 16 threads of one process"
        data = record_path.read_bytes()
        assert all(records[i] == data[i * RECORD:(i + 1) * RECORD] for i in range(16))
    finally:
        for fd in opened[1:]:
            os.close(fd)
        file.close()


@needs_fork
def test_its_open_lock_does_not_cross_fork(record_path):
    # If a thread of the parent held the lock at fork time, the child's first read
    # must not wait for it forever.
    file = PerWorkerFile(record_path)
    code = exit_code_of_child_forked_holding(per_worker_file._open_lock, lambda: file.read_at(0, 4))
    assert code is not None, "the child waited for an open lock held by the parent at fork time"
    assert code == 0


def test_a_pickled_copy_carries_no_descriptor(record_path):
    file = PerWorkerFile(record_path)
    file.fileno()
    copy = pickle.loads(pickle.dumps(file))
    assert copy._fd is None and copy.path == file.path
    assert copy.read_at(RECORD, 4) == file.read_at(RECORD, 4)
    copy.close()
    file.close()


def _child_offsets(inherited, per_worker, answer):
    inherited.seek(1000)                  # moves the description shared with the parent
    duplicate = os.dup(inherited.fileno())
    os.lseek(duplicate, 2000, os.SEEK_SET)  # so does a duplicate: same description
    os.close(duplicate)
    per_worker.read_at(3000, 10)          # moves nothing
    answer.put(per_worker.fileno() != inherited.fileno())


@needs_fork
def test_fork_shares_the_offset_and_per_worker_file_does_not(record_path):
    """The root cause, deterministically: no race needed to see the offset move."""
    with open(record_path, "rb") as inherited:
        per_worker = PerWorkerFile(record_path)
        per_worker.fileno()  # opened in the parent too: the child must not use it
        answer = FORK.Queue()
        child = FORK.Process(target=_child_offsets,
                             args=(inherited, per_worker, answer))
        child.start()
        own_descriptor = answer.get(timeout=60)
        child.join(timeout=60)
        assert child.exitcode == 0 and own_descriptor
        # The child's lseek on the duplicate came last: the parent's file sees it.
        assert os.lseek(inherited.fileno(), 0, os.SEEK_CUR) == 2000
        assert os.lseek(per_worker.fileno(), 0, os.SEEK_CUR) == 0
        per_worker.close()


class _Records(Dataset):
    def __init__(self, path):
        self.file = PerWorkerFile(path)

    def __len__(self):
        return COUNT

    def __getitem__(self, index):
        return torch.frombuffer(bytearray(self.file.read_at(index * RECORD, RECORD)), dtype=torch.uint8)


def _epoch(path, num_workers):
    loader = DataLoader(_Records(path), batch_size=16, shuffle=True, num_workers=num_workers,
                        generator=torch.Generator().manual_seed(11),
                        multiprocessing_context=FORK if num_workers else None)
    return torch.cat(list(loader))


@needs_fork
def test_oracle_workers_yield_exactly_what_the_main_process_reads(record_path):
    expected = _epoch(record_path, num_workers=0)
    assert expected.shape == (COUNT, RECORD)
    assert torch.equal(_epoch(record_path, num_workers=2), expected)
