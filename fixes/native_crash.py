"""Find and prevent the native crash that kills a DataLoader worker.
Fixes scenario 06 ("DataLoader worker (pid(s) …) exited unexpectedly").

When native code (a C extension's decoder, ctypes, a bad wheel) crashes inside a
worker, the kernel kills the worker with a signal (SIGSEGV, SIGBUS, SIGFPE…); the
main process only learns *that* it died, not where or on which sample.

Diagnose:
    trail = CrashTrail(some_temporary_dir)
    loader = DataLoader(..., worker_init_fn=trail.worker_init_fn)
    # in __getitem__:   with CrashTrail.inside(path.name): return decode(path)
    # after the crash:  trail.last_samples()  ->  {worker_id: name}
`worker_init_fn` turns `faulthandler` on in each worker, so a fatal signal prints
the worker's Python stack down to the line that called into native code.

Prevent: check what a file says about itself before native code trusts it:
    check_span(offset, length, available=len(blob), source=path.name)
    good, rejected = keep_valid(paths, check)   # rejected: [(path, reason), …]
"""
from __future__ import annotations

import contextlib
import faulthandler
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

_TRAIL_SLOT = 256  # bytes per worker trail file: one sample name, overwritten in place
_trail_fd: int | None = None


class MalformedSample(ValueError):
    """A sample whose own header describes bytes it does not have."""


def check_span(offset: int, length: int, available: int, source: str = "sample") -> None:
    """Raise MalformedSample unless [offset, offset + length) lies within `available` bytes."""
    if offset < 0 or length < 0 or offset + length > available:
        raise MalformedSample(
            f"{source}: header puts {length} bytes at offset {offset}, but only {available} "
            "bytes exist; the file is damaged: re-create it, and keep it from native code with "
            "fixes.native_crash.keep_valid()")


def keep_valid(items: Iterable, check: Callable) -> tuple[list, list]:
    """Split `items` by `check(item)` (which raises MalformedSample for a bad one):
    returns (the good items in order, [(bad item, reason), …])."""
    good, rejected = [], []
    for item in items:
        try:
            check(item)
        except MalformedSample as err:
            rejected.append((item, str(err)))
        else:
            good.append(item)
    return good, rejected


class CrashTrail:
    """Which sample each worker was inside when it died, plus faulthandler's stack."""

    def __init__(self, directory):
        self.directory = Path(directory)
        if not self.directory.is_dir():
            raise NotADirectoryError(
                f"CrashTrail needs an existing directory, got {directory}: "
                "pass a tempfile.TemporaryDirectory() that outlives the loader")

    def worker_init_fn(self, worker_id: int) -> None:
        """Pass as DataLoader(worker_init_fn=…); runs once in each worker."""
        global _trail_fd
        # Chains to the handler torch installed, so its own message still follows.
        try:
            faulthandler.enable(file=sys.stderr, all_threads=False)
        except (AttributeError, ValueError, OSError):  # a stderr with no file descriptor
            faulthandler.enable(file=sys.__stderr__, all_threads=False)
        _trail_fd = os.open(self.directory / f"worker_{worker_id}.last",
                            os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)

    @staticmethod
    def mark(sample: str) -> None:
        """Record the sample this worker is now inside ("" for none); a no-op
        outside a worker started with this trail's worker_init_fn."""
        if _trail_fd is not None:  # one pwrite: no buffer to lose when the process dies
            os.pwrite(_trail_fd, sample.encode()[:_TRAIL_SLOT].ljust(_TRAIL_SLOT), 0)

    @staticmethod
    @contextlib.contextmanager
    def inside(sample: str):
        """Mark `sample` for the duration of the block; cleared when it ends normally."""
        CrashTrail.mark(sample)
        yield
        CrashTrail.mark("")

    def last_samples(self) -> dict[int, str]:
        """{worker id: the sample it was inside when last seen}, read after the
        loader failed; workers that were between samples are left out."""
        found = {}
        for path in sorted(self.directory.glob("worker_*.last")):
            name = path.read_bytes().decode(errors="replace").strip()
            if name:
                found[int(path.stem.split("_")[1])] = name
        return found
