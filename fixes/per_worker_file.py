"""PerWorkerFile: a read-only file that forked DataLoader workers can share
safely.  Fixes scenario 11 (one file handle shared by forked workers: samples
silently come back with another record's bytes).

A file opened in a Dataset's `__init__` is one *open file description* in the
kernel, and every forked worker's copy of it points at that same description,
with one shared file offset: worker 0 seeks to its record, worker 1 seeks to
another, worker 0 reads worker 1's record.  Nothing raises; the samples are
simply wrong.  (`os.dup` does not help: a duplicated descriptor shares the
offset too.)

This class removes both halves of the hazard: each process opens its own
descriptor on first use (a new description, a private offset), and reads with
`os.pread`, which takes the offset as an argument and never moves the shared
one.  Construct it in `__init__`, read from `__getitem__`:

    self.file = PerWorkerFile(path)                     # main process: nothing opened yet
    record = self.file.read_at(offset, RECORD_BYTES)   # each worker: its own descriptor

The first read in a process opens the descriptor under a lock, so threads of
one worker (a thread pool in `__getitem__`, say) that read at once still share
one descriptor instead of each opening, and leaking, their own.  The idea is
that of PerWorker (fixes/per_worker.py, scenario 01), repeated here so that
this file can be copied alone.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

# Guards the first open in a process.  Replaced in a forked child: a parent thread
# may hold it at the moment of fork, and nobody would release the child's copy.
_open_lock = threading.Lock()


def _new_open_lock_in_child() -> None:
    global _open_lock
    _open_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_open_lock_in_child)


class PerWorkerFile:
    """Positional reads from `path` through a descriptor private to the calling process."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"PerWorkerFile: {self.path} is not a readable file; "
                                    "check the path the Dataset was given")
        self._fd: int | None = None
        self._pid: int | None = None  # the process that opened _fd

    def fileno(self) -> int:
        """This process's own descriptor, opened on first use (and again after a fork)."""
        pid = os.getpid()
        if self._pid != pid:
            with _open_lock:
                if self._pid != pid:  # another thread may have opened it while we waited
                    # A descriptor inherited through fork still shares the parent's offset;
                    # leave it alone (closing it here would not close the parent's) and open anew.
                    self._fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
                    self._pid = pid
        return self._fd  # type: ignore[return-value]

    def read_at(self, offset: int, size: int) -> bytes:
        """Exactly `size` bytes at `offset`; raises EOFError rather than return fewer."""
        if offset < 0 or size < 0:
            raise ValueError(f"PerWorkerFile.read_at: offset ({offset}) and size ({size}) must be >= 0")
        chunks, done = [], 0
        while done < size:  # pread may return less than asked (signals, network file systems)
            chunk = os.pread(self.fileno(), size - done, offset + done)
            if not chunk:
                raise EOFError(f"{self.path}: wanted {size} bytes at offset {offset}, the file "
                               f"ends after {done}; is the index out of range or the file truncated?")
            chunks.append(chunk)
            done += len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def close(self) -> None:
        """Close this process's descriptor, if it opened one (not while other threads read)."""
        with _open_lock:
            self._close_own()

    def _close_own(self) -> None:
        if self._fd is not None and self._pid == os.getpid():
            os.close(self._fd)
        self._fd = self._pid = None

    def __getstate__(self):
        # spawn/forkserver workers receive a pickled copy: it must not carry a descriptor number.
        return {"path": self.path, "_fd": None, "_pid": None}

    def __del__(self):
        # No lock here: garbage collection may run in a thread that already holds it.
        try:
            self._close_own()
        except Exception:
            pass

    def __repr__(self) -> str:
        state = f"fd {self._fd} in pid {self._pid}" if self._pid == os.getpid() else "not opened in this process"
        return f"PerWorkerFile({str(self.path)!r}, {state})"
