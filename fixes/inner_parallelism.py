"""parallel_map: parallel work inside a Dataset's `__getitem__` that is safe in a DataLoader worker.
Fixes scenario 17 (a process pool inside a worker): `multiprocessing.Pool(...)` or
`concurrent.futures.ProcessPoolExecutor(...)` started in `__getitem__` works with
`num_workers=0` and fails in every worker with "AssertionError: daemonic processes are not
allowed to have children", because PyTorch starts its workers as daemonic processes and
Python forbids those to start processes of their own.

    from inner_parallelism import parallel_map
    tiles = parallel_map(decode_tile, blobs)   # in __getitem__, in any process

parallel_map runs `fn` over the items in threads, which a daemonic process may start.
Threads overlap only work that releases the GIL (zlib, numpy, Pillow's decoders, file
and network I/O); pure-Python work gains nothing from them.  It picks its thread count
from what the process may use: in a DataLoader worker, the CPUs left for it once the
other workers have theirs (PyTorch already gives each worker one intra-op thread for the
same reason); with one CPU or fewer per worker it runs the items in order, in the
worker itself, because `num_workers` already keeps those CPUs busy.

Each process keeps its own thread pool.  A pool inherited through fork has no threads in
the child (fork copies only the calling thread), and work submitted to it would wait
forever, so a pool is never reused in another process.
"""
from __future__ import annotations

import multiprocessing
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

_pools: dict[tuple[int, int], ThreadPoolExecutor] = {}  # (pid, threads) -> this process's pool
_pools_lock = threading.Lock()


def _forget_parent_pools() -> None:
    # The child of fork has none of the parent's threads: neither the pools' threads nor the
    # one that may have held the lock at that moment.
    global _pools_lock
    _pools_lock = threading.Lock()
    _pools.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_parent_pools)


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask, which containers and taskset narrow)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def dataloader_workers() -> int:
    """How many DataLoader workers share this machine with this process: 0 outside a worker."""
    try:
        from torch.utils.data import get_worker_info
    except ImportError:
        return 0
    info = get_worker_info()
    return info.num_workers if info is not None else 0


def threads_for_this_process() -> int:
    """Threads worth starting here: the usable CPUs divided among the DataLoader workers."""
    return max(1, usable_cpus() // max(1, dataloader_workers()))


def can_start_processes() -> bool:
    """False in a daemonic process (a DataLoader worker, a multiprocessing.Pool worker),
    where starting a process raises "daemonic processes are not allowed to have children"."""
    return not multiprocessing.current_process().daemon


def _pool(threads: int) -> ThreadPoolExecutor:
    key = (os.getpid(), threads)
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="parallel_map")
        return pool


def parallel_map(fn: Callable[[T], R], items: Iterable[T], threads: int | None = None) -> list[R]:
    """[fn(item) for item in items], computed in up to `threads` threads of this process.

    threads=None picks threads_for_this_process(); 1 (or a single item) runs in order
    without a pool.  Results keep the order of `items`; the first exception is re-raised.
    """
    items = list(items)
    if threads is None:
        threads = threads_for_this_process()
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    threads = min(threads, len(items))
    if threads <= 1:
        return [fn(item) for item in items]
    return list(_pool(threads).map(fn, items))
