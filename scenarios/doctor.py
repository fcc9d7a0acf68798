"""`make doctor`: what this machine can reproduce, and what to do where it cannot."""
from __future__ import annotations

import multiprocessing
import platform
import resource
import shutil
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from scenarios.runner import REPO_ROOT, discover, missing_needs, user_namespaces_work


def _pinned(package: str) -> str:
    for line in (REPO_ROOT / "requirements.txt").read_text().splitlines():
        if line.startswith(package + "=="):
            return line.split("==")[1]
    return "?"


def _py_spy_can_attach() -> bool:
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(py_spy).exists():
        return False
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        return subprocess.run([py_spy, "dump", "--pid", str(sleeper.pid)],
                              capture_output=True, timeout=15).returncode == 0
    finally:
        sleeper.kill()
        sleeper.wait()


def checks() -> list[tuple[bool, str, str]]:
    """(ok, what, advice) for each thing the scenarios rely on."""
    try:
        torch_version = version("torch")
    except PackageNotFoundError:
        torch_version = "not installed"
    shm = shutil.disk_usage("/dev/shm") if Path("/dev/shm").exists() else None
    soft_fds, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return [
        (sys.version_info >= (3, 11), f"Python {platform.python_version()}", "use Python 3.11 or newer"),
        (torch_version.split("+")[0] == _pinned("torch"), f"torch {torch_version} (pinned {_pinned('torch')})",
         "messages and figures differ between releases: run `make setup`"),
        ("fork" in multiprocessing.get_all_start_methods(), f"start methods: {', '.join(multiprocessing.get_all_start_methods())}",
         "the fork scenarios need Linux"),
        (user_namespaces_work(), "unprivileged user namespaces (private /dev/shm for scenario 04)",
         "enable kernel.unprivileged_userns_clone, or run outside a restrictive container"),
        (shm is not None, f"/dev/shm: {shm.free / 2**20:.0f} MB free of {shm.total / 2**20:.0f} MB" if shm else "/dev/shm missing",
         "DataLoader workers pass batches through /dev/shm"),
        (_py_spy_can_attach(), "py-spy can read other processes' stacks (hang diagnosis)",
         "run as a user allowed to ptrace (or set kernel.yama.ptrace_scope=0); the runner falls back to /proc"),
        (True, f"open files limit (ulimit -n): {soft_fds}", ""),
    ]


def main() -> int:
    print(f"DataLoader Clinic doctor · {platform.system()} {platform.machine()}")
    for ok, what, advice in checks():
        print(f"  {'✔' if ok else '✘'} {what}" + ("" if ok else f"\n      → {advice}"))
    print("Scenarios:")
    for number, scenario in discover().items():
        why_not = missing_needs(scenario)
        print(f"  {'✔' if not why_not else '✘'} {number} {scenario.title}" + (f"\n      → {why_not}" if why_not else ""))
    return 0
