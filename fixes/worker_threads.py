"""limit_worker_threads: a worker_init_fn that gives each DataLoader worker its share of the CPUs.
Fixes scenario 21 (thread oversubscription in workers): PyTorch sets its own intra-op
threads to 1 in every worker, but OpenCV, the BLAS under numpy and any OpenMP runtime keep
pools sized for the whole machine, in every worker.  With as many workers as cores, each
core then has several busy threads: no error, only a slower loader and a load average far
above the cores.

    from worker_threads import limit_worker_threads
    loader = DataLoader(dataset, num_workers=4, worker_init_fn=limit_worker_threads)

    def my_init(worker_id):          # with an init function of your own
        limit_worker_threads(worker_id)
        ...

In each worker it sets every library's pool to the CPUs this process may use divided by
the number of workers (at least 1): OpenCV through cv2.setNumThreads, every BLAS and OpenMP
runtime loaded in the process through threadpoolctl, torch through torch.set_num_threads.
For one thread OpenCV is given 0 ("run sequentially"), never 1: cv2.setNumThreads(1) in a
worker forked after the training process had used OpenCV's pool never returns.
Each library is limited only where it is installed; none is needed.  It also sets the
environment variables those libraries read when they are first loaded (OMP_NUM_THREADS,
OPENBLAS_NUM_THREADS, MKL_NUM_THREADS, OPENCV_FOR_THREADS_NUM), for a library the worker
imports later; for a library already loaded they change nothing, which is why the calls
are needed.
"""
from __future__ import annotations

import os
import sys

ENVIRONMENT = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OPENCV_FOR_THREADS_NUM")


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask, which containers and taskset narrow)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def threads_per_worker() -> int:
    """The usable CPUs divided among the DataLoader workers; all of them outside a worker."""
    try:
        from torch.utils.data import get_worker_info
        info = get_worker_info()
    except ImportError:
        info = None
    return max(1, usable_cpus() // (info.num_workers if info is not None else 1))


def limit_threads(threads: int) -> dict[str, int]:
    """Set every thread pool this process has, or will load, to `threads`.

    Returns what was limited, library by library (name -> threads), for a log line.
    """
    if not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a whole number of at least 1, got {threads!r}")
    for name in ENVIRONMENT:
        os.environ[name] = str(threads)
    limited = {}
    # Only libraries already imported: importing one here would cost a worker its memory
    # and start-up time for a library the dataset may never use.
    cv2, torch = sys.modules.get("cv2"), sys.modules.get("torch")
    if cv2 is not None:
        # 0 is OpenCV's "run sequentially": one thread, the caller's.  Not 1: in a worker forked
        # after the parent had run OpenCV's pool, cv2.setNumThreads(1) waits forever for pool
        # threads that fork did not copy (OpenCV 5.0's pthreads pool; 0, 2 and more return).
        cv2.setNumThreads(0 if threads == 1 else threads)
        limited["cv2"] = cv2.getNumThreads()
    if torch is not None:
        torch.set_num_threads(threads)
        limited["torch"] = torch.get_num_threads()
    limited.update(_limit_native_pools(threads))
    return limited


def _limit_native_pools(threads: int) -> dict[str, int]:
    # threadpoolctl finds each BLAS (OpenBLAS, MKL, BLIS) and OpenMP runtime loaded in the
    # process, including copies bundled inside wheels (opencv-python ships its own OpenBLAS).
    try:
        from threadpoolctl import threadpool_info, threadpool_limits
    except ImportError:
        return {}
    threadpool_limits(limits=threads)  # applied now; kept, since it is never used as a context
    return {pool["prefix"]: pool["num_threads"] for pool in threadpool_info()}


def limit_worker_threads(worker_id: int | None = None) -> dict[str, int]:
    """A DataLoader worker_init_fn: every library's pool set to this worker's share of the CPUs."""
    return limit_threads(threads_per_worker())
