"""Measuring instruments: what the scenario scripts and the runner use to *see* a failure.

Not fixes (those live in fixes/, one copyable file each): these read memory, descriptors and
/dev/shm from outside the code under test, so that a broken script and its fixed twin are
measured by the same hands.  Linux only where they read /proc; each says so when it cannot work.

Scripts import them from here (`from scenarios.instruments import LoaderMemoryWatch`); each
module holds one kind:
- processes.py: which processes are a loader's (its workers, its helpers), read from /proc;
- memory.py: what those processes hold, and the watches that sample it during a loop;
- cpu_wait.py: the time they waited for a CPU, and the share at which a timing measures the machine;
- open_files.py: the descriptors this process holds, and PyTorch's files in /dev/shm.
"""
from scenarios.instruments.cpu_wait import BUSY_SHARE, CpuWait
from scenarios.instruments.memory import (MIB, LoaderMemoryWatch, ShmUsageWatch, WorkerMemoryWatch, loader_memory_bytes,
                                          process_memory_mb)
from scenarios.instruments.open_files import (SHM_DIR, open_fd_count, remove_torch_shm_files, shm_file_creator,
                                              torch_shm_files)
from scenarios.instruments.processes import helper_kind, worker_pids

__all__ = ["BUSY_SHARE", "MIB", "SHM_DIR", "CpuWait", "LoaderMemoryWatch", "ShmUsageWatch", "WorkerMemoryWatch",
           "helper_kind", "loader_memory_bytes", "open_fd_count", "process_memory_mb", "remove_torch_shm_files",
           "shm_file_creator", "torch_shm_files", "worker_pids"]
