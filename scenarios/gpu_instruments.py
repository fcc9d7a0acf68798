"""What the GPU scenarios (25-28) read about a CUDA device from outside torch: which processes hold a
CUDA context, and how much of the card's memory each takes.  Reading it never initialises CUDA."""
from __future__ import annotations

import os
import shutil
import subprocess


def gpu_memory_mib_by_pid() -> dict[int, float] | None:
    """GPU memory per process, as `nvidia-smi --query-compute-apps` lists it; None where nvidia-smi
    is missing or fails.  In a container with its own pid namespace the pids may be the host's:
    holds_cuda_context() answers without them."""
    if not shutil.which("nvidia-smi"):
        return None
    try:
        done = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        return None
    found = {}
    for line in done.stdout.splitlines():
        pid, _, used = line.partition(",")
        if pid.strip().isdigit() and used.strip().replace(".", "", 1).isdigit():
            found[int(pid)] = float(used)
    return found


def holds_cuda_context(pid: int) -> bool:
    """The process has a GPU's device file open (/dev/nvidia0, /dev/nvidia-uvm, …): the CUDA driver
    opens them when a context is created, and they stay open as long as it lives."""
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for name in names:
        try:
            if os.readlink(f"/proc/{pid}/fd/{name}").startswith("/dev/nvidia"):
                return True
        except OSError:
            continue
    return False


def context_census(pids: list[int]) -> tuple[int, list[float]]:
    """How many of these processes hold a CUDA context, and the GPU memory (MiB) that nvidia-smi
    gives for each of them it lists (an empty list where its pids are another namespace's)."""
    by_pid = gpu_memory_mib_by_pid() or {}
    return sum(holds_cuda_context(pid) for pid in pids), [by_pid[pid] for pid in pids if pid in by_pid]
