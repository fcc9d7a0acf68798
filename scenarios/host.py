"""What this machine offers the scenarios, and the exit statuses every command and script shares.

One copy of each platform probe: the runner, the doctor, the scripts and the tests ask here.
"""
from __future__ import annotations

import ctypes
import functools
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

# One table for `python -m scenarios` (run, check, doctor, bench) and for the scripts:
# a script that finds its machine lacking calls cannot_run(), and the runner reads 3 as that.
EXIT_OK = 0             # everything as it should be
EXIT_NOT_AS_EXPECTED = 1  # ran, but did not show what it should (or the doctor found risks)
EXIT_BAD_INPUT = 2      # unknown scenario, bad arguments, a missing package
EXIT_CANNOT_RUN = 3     # this machine lacks what it needs (fork, user namespaces, Linux)


def cannot_run(why: str):
    """End a script with 'cannot run here: <why>' and EXIT_CANNOT_RUN (never a traceback)."""
    print(f"cannot run here: {why}", file=sys.stderr, flush=True)
    sys.exit(EXIT_CANNOT_RUN)


USERNS_COMMAND = ["unshare", "--user", "--map-root-user", "--mount"]


@functools.cache
def user_namespaces_problem() -> str | None:
    """Why an unprivileged process cannot make its own mount namespace here (for a
    private /dev/shm), or None when it can."""
    if not sys.platform.startswith("linux"):
        return f"needs Linux mount namespaces (this is {sys.platform})"
    if not shutil.which("unshare"):
        return "needs `unshare` from util-linux (apt install util-linux)"
    probe = subprocess.run([*USERNS_COMMAND, "true"], capture_output=True, text=True, timeout=10)
    if probe.returncode != 0:
        return (f"unprivileged user namespaces are not available ({probe.stderr.strip() or 'unshare failed'}); "
                "enable them (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces>0) "
                "or run outside a container that forbids them")
    return None


def user_namespaces_work() -> bool:
    return user_namespaces_problem() is None


def py_spy_path() -> str | None:
    """py-spy on PATH, or next to this interpreter (a venv's bin/ not on PATH)."""
    beside = Path(sys.executable).with_name("py-spy")
    return shutil.which("py-spy") or (str(beside) if beside.exists() else None)


def py_spy_problem() -> str | None:
    """Why py-spy cannot show another process's stack here, with the remedy; None when it can."""
    py_spy = py_spy_path()
    if py_spy is None:
        return "py-spy is not installed: `pip install py-spy` (or `make setup`) to see where a hang waits"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        done = subprocess.run([py_spy, "dump", "--pid", str(sleeper.pid)],
                              capture_output=True, text=True, timeout=15)
    finally:
        sleeper.kill()
        sleeper.wait()
    if done.returncode == 0:
        return None
    return ("py-spy is installed but may not read other processes (ptrace refused): run as root, "
            "set kernel.yama.ptrace_scope=0, or in Docker add --cap-add SYS_PTRACE; "
            "until then hangs are shown from /proc only")


# ---------------------------------------------------------------- a CUDA device

# What works from any state (Makefile, `setup`): it replaces a CPU torch already in .venv.
CUDA_BUILD_HINT = ("`make setup TORCH_INDEX=https://download.pytorch.org/whl/cu128` puts a CUDA torch in .venv, "
                   "in place of a CPU one (cu126, cu130: another CUDA your driver supports, as nvidia-smi shows); "
                   "or, where the machine's own python3 has a CUDA torch, add PYTHON=python3 to any make command")


def cuda_problem_here() -> str | None:
    """Why this process's torch has no usable CUDA device, as one sentence with what to do; None
    where it has one.  A scenario script asks here (its own torch, which it imports anyway)."""
    import torch

    if torch.version.cuda is None:
        return _cpu_build(torch.__version__)
    if not torch.cuda.is_available():
        return (f"needs a CUDA GPU: torch {torch.__version__} (CUDA {torch.version.cuda}) finds no usable device; "
                "`nvidia-smi` shows whether the driver sees a card")
    return None


def _cpu_build(version: str) -> str:
    return (f"needs a CUDA GPU: torch {version} is a build without CUDA; on a machine with an NVIDIA card: "
            f"{CUDA_BUILD_HINT}")


def _build_without_cuda() -> str | None:
    """The installed torch's version where its build has no CUDA, read from torch/version.py (the
    file torch.version is) without importing torch: three seconds saved on every CPU machine."""
    try:
        spec = importlib.util.find_spec("torch")
        text = (Path(spec.origin).parent / "version.py").read_text()
    except (ImportError, AttributeError, TypeError, OSError):
        return None
    version = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)", text, re.M)
    no_cuda = re.search(r"^cuda(?::[^=]*)?=\s*None\s*$", text, re.M)
    return version.group(1) if version and no_cuda else None


@functools.cache
def cuda_problem() -> str | None:
    """cuda_problem_here(), asked in a child process: the runner and `make doctor` never import
    torch, and a process that asked CUDA itself could no longer fork safely."""
    version = _build_without_cuda()
    if version:
        return _cpu_build(version)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from scenarios.host import cuda_problem_here; "
            "print(cuda_problem_here() or '')")
    try:
        done = subprocess.run([sys.executable, "-c", code, str(Path(__file__).resolve().parents[1])],
                              capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "needs a CUDA GPU: torch took over 120 s to say whether it has one; `nvidia-smi` shows the card's state"
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"needs a CUDA GPU: torch could not be asked here ({said})"
    return done.stdout.strip() or None


def become_subreaper() -> None:
    """Orphaned descendants are re-parented to this process instead of PID 1 (which in a
    container may never reap them), so that it can wait for them.  Linux only; only a
    command line (the runner's supervisor) calls this, never a library user's process."""
    if sys.platform.startswith("linux"):
        PR_SET_CHILD_SUBREAPER = 36
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


# ---------------------------------------------------------------- start method, cores, memory

def default_start_method() -> str:
    """The start method a process gets when it names none, read without fixing it
    (multiprocessing.get_start_method() would make the default this process's choice).
    Python's documented rule: spawn on Windows and, since 3.8, on macOS; forkserver on
    other POSIX systems since 3.14 (where the platform can pass descriptors); fork before."""
    import multiprocessing
    import multiprocessing.reduction

    chosen = multiprocessing.get_start_method(allow_none=True)
    if chosen:
        return chosen
    if sys.platform in ("win32", "darwin"):
        return "spawn"
    if sys.version_info >= (3, 14) and multiprocessing.reduction.HAVE_SEND_HANDLE:
        return "forkserver"
    return "fork"


def cgroup_file(v2_name: str, v1_name: str) -> Path | None:
    """This process's cgroup file (v2, or v1 given as `controller/file`), most specific first."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    controller, v1_file = v1_name.split("/")
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "" or controller in controllers.split(","):
            base, name = Path("/sys/fs/cgroup", controllers), v2_name if controllers == "" else v1_file
            for candidate in (base / path.lstrip("/") / name, base / name):
                if candidate.is_file():
                    return candidate
    return None


def _cgroup_numbers(path: Path | None, *neighbours: str) -> list[int] | None:
    """The numbers in a cgroup file (and in files beside it); None for 'max', -1 or unreadable."""
    try:
        words = path.read_text().split() + [path.with_name(n).read_text().strip() for n in neighbours]
        numbers = [int(w) for w in words]
    except (AttributeError, OSError, ValueError):
        return None
    return None if numbers[0] < 0 or numbers[0] >= 2**60 else numbers


def usable_cores() -> tuple[int, str]:
    """Cores this process may run on, and why: its CPU affinity, or a container's CPU quota."""
    import os

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    source = "CPU affinity" if hasattr(os, "sched_getaffinity") else "os.cpu_count()"
    quota_file = cgroup_file("cpu.max", "cpu/cpu.cfs_quota_us")
    quota = _cgroup_numbers(quota_file, *(() if quota_file is None or quota_file.name == "cpu.max"
                                          else ("cpu.cfs_period_us",)))
    if quota and len(quota) == 2 and quota[0] / quota[1] < cores:
        return max(1, quota[0] // quota[1]), f"container CPU quota {quota[0] / quota[1]:g}"
    return cores, source


def memory_headroom() -> tuple[int, str]:
    """Bytes this job may still take: the RAM the kernel calls available, or less where a
    cgroup (a container, a Slurm job) limits it."""
    import psutil

    available = psutil.virtual_memory().available
    limit_file = cgroup_file("memory.max", "memory/memory.limit_in_bytes")
    usage = "memory.current" if limit_file is not None and limit_file.name == "memory.max" else "memory.usage_in_bytes"
    limit = _cgroup_numbers(limit_file, usage)
    if limit and limit[0] - limit[1] < available:
        return max(limit[0] - limit[1], 0), f"left under the cgroup limit of {limit[0] / 2**20:,.0f} MB"
    return available, "RAM available"
