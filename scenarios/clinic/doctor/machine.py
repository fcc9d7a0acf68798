"""`make doctor`: what this machine can reproduce, and what to do where it cannot."""
from __future__ import annotations

import multiprocessing
import platform
import resource
import shutil
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from scenarios.clinic.run.declarations import REPO_ROOT, discover, missing_needs
from scenarios.host import default_start_method, py_spy_problem, user_namespaces_problem


def _pinned(package: str) -> str:
    for line in (REPO_ROOT / "requirements.txt").read_text().splitlines():
        if line.startswith(package + "=="):
            return line.split("==")[1]
    return "?"


def start_method_line() -> str:
    """The start method a DataLoader gets here when it names none (multiprocessing_context=None),
    and what Python 3.14 changes about it."""
    chosen = multiprocessing.get_start_method(allow_none=True)  # set_start_method() was called
    default = default_start_method()
    line = f"start method of a DataLoader that names none: {default}" + (" (set by set_start_method)" if chosen else "")
    if default == "fork" and sys.platform == "linux":
        line += ("; from Python 3.14 Linux defaults to forkserver: the dataset, collate_fn and worker_init_fn "
                 "reach each worker by pickle, so a lock or an open file in them fails at the first batch "
                 "(each scenario README: \"On Python 3.14 and later\")")
    elif default in ("forkserver", "spawn"):
        line += ("; workers receive the dataset by pickle: a lock or an open file in it fails at the first batch, "
                 "and fork-only scenarios pass multiprocessing_context=\"fork\" to show what they show")
    return line


def checks() -> list[tuple[bool, str, str]]:
    """(ok, what, advice) for each thing the scenarios rely on."""
    try:
        torch_version = version("torch")
    except PackageNotFoundError:
        torch_version = "not installed"
    shm = shutil.disk_usage("/dev/shm") if Path("/dev/shm").exists() else None
    soft_fds, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    userns_problem, spy_problem = user_namespaces_problem(), py_spy_problem()
    return [
        (sys.version_info >= (3, 11), f"Python {platform.python_version()}", "use Python 3.11 or newer"),
        (torch_version.split("+")[0] == _pinned("torch"), f"torch {torch_version} (pinned {_pinned('torch')})",
         "messages and figures differ between releases: run `make setup`"),
        ("fork" in multiprocessing.get_all_start_methods(),
         f"start methods: {', '.join(multiprocessing.get_all_start_methods())}",
         "the fork scenarios need Linux"),
        (True, start_method_line(), ""),
        (userns_problem is None, "unprivileged user namespaces (private /dev/shm for scenario 04)",
         userns_problem or ""),
        (shm is not None,
         f"/dev/shm: {shm.free / 2**20:.0f} MB free of {shm.total / 2**20:.0f} MB" if shm else "/dev/shm missing",
         "DataLoader workers pass batches through /dev/shm"),
        (spy_problem is None, "py-spy can read other processes' stacks (hang diagnosis)", spy_problem or ""),
        (True, f"open files limit (ulimit -n): {soft_fds}", ""),
    ]


def main() -> int:
    print(f"DataLoader Clinic doctor · {platform.system()} {platform.machine()}")
    for ok, what, advice in checks():
        print(f"  {'✔' if ok else '✘'} {what}" + ("" if ok else f"\n      → {advice}"))
    print("Scenarios:")
    for number, scenario in discover().items():
        why_not = missing_needs(scenario)
        print(f"  {'✔' if not why_not else '✘'} {number} {scenario.title}"
              + (f"\n      → {why_not}" if why_not else ""))
    return 0
