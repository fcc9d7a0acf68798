"""File descriptors and shared-memory files of DataLoader batches (scenario 08).

With the default `file_descriptor` sharing strategy on Linux, every tensor a
worker sends to the training process arrives as a block of shared memory held
open by one file descriptor; the descriptor is closed only when the tensor is
freed.  A loop that keeps the batches it receives (collecting labels or
outputs for a metric at the end of an epoch) therefore holds one descriptor per
kept tensor, until `ulimit -n` is reached and PyTorch gives up with
"Too many open files. Communication with the workers is no longer possible".

* `copy_out_of_shared_memory(batch)` is the fix: keep copies, and the shared
  blocks (and their descriptors) are freed as soon as the loop moves on.
* `open_fd_count()` and `fd_soft_limit()` make the climb visible from inside
  the training process (the `ls /proc/self/fd | wc -l` of the seed article).
* `torch_shm_files()` and `remove_torch_shm_files()` are for the other remedy,
  the `file_system` strategy, whose named `/dev/shm/torch_<pid>_*` files can
  outlive a job that was killed together with its `torch_shm_manager`.
"""
from __future__ import annotations

import collections.abc
import os
import resource
from pathlib import Path

import torch

SHM_DIR = Path("/dev/shm")


def copy_out_of_shared_memory(batch):
    """The same batch, with every tensor that lives in shared memory replaced by a
    private copy; other tensors and values are returned as they are.

    Works on what `default_collate` produces: tensors, and tuples, lists,
    named tuples and dicts of them, nested.  For one tensor it is `t.clone()`.
    """
    if isinstance(batch, torch.Tensor):
        return batch.clone() if batch.is_shared() else batch
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # a named tuple
        return type(batch)(*(copy_out_of_shared_memory(item) for item in batch))
    if isinstance(batch, (tuple, list)):
        return type(batch)(copy_out_of_shared_memory(item) for item in batch)
    if isinstance(batch, collections.abc.Mapping):
        return {key: copy_out_of_shared_memory(value) for key, value in batch.items()}
    return batch


def open_fd_count() -> int:
    """How many file descriptors this process holds open now (Linux, /proc)."""
    fd_dir = Path("/proc/self/fd")
    if not fd_dir.is_dir():
        raise RuntimeError("open_fd_count() needs Linux's /proc/self/fd; on macOS use "
                           "`lsof -p <pid> | wc -l` instead")
    return len(os.listdir(fd_dir)) - 1  # listdir's own descriptor is in the listing


def fd_soft_limit() -> int:
    """The limit `ulimit -n` shows: the most descriptors this process may hold."""
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def torch_shm_files(pids) -> list[Path]:
    """The `file_system` strategy's files in /dev/shm created by the given processes.

    PyTorch names them `torch_<pid of the creating process>_<random>_<counter>`;
    with a DataLoader the creating processes are its workers.
    """
    prefixes = tuple(f"torch_{int(pid)}_" for pid in pids)
    if not prefixes or not SHM_DIR.is_dir():
        return []
    return sorted(p for p in SHM_DIR.iterdir() if p.name.startswith(prefixes))


def remove_torch_shm_files(pids) -> list[str]:
    """Unlink the /dev/shm files that the given, dead, processes created; return their names.

    Only for processes that are gone: a file whose creator still runs may be in
    use, and its memory is returned only when the last process unmaps it anyway.
    """
    alive = [pid for pid in pids if _is_running(int(pid))]
    if alive:
        raise RuntimeError(f"process(es) {', '.join(map(str, alive))} still run: stop the job "
                           "first, then remove its /dev/shm files")
    removed = []
    for path in torch_shm_files(pids):
        try:
            path.unlink()
        except FileNotFoundError:  # its manager removed it meanwhile
            continue
        removed.append(path.name)
    return removed


def _is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie has exited; it only waits to be reaped
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True
