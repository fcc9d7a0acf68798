"""One memory cgroup, through the kernel's files: which group a process is in, a child group made
below this process's own with a limit, its counters (read the same on cgroup v1 and v2), and its
removal, with the groups that killed runs left behind.

Not for running: scenarios/memory_cgroup.py puts a script's run in such a group and watches it
(cgroup_watch.py); the doctor reads a running job's group through it.
"""
from __future__ import annotations

import contextlib
import errno
import os
import sys
import time
from pathlib import Path

PREFIX = "dataloader-clinic-"
MIB = 2**20


class CannotLimit(Exception):
    """No memory cgroup can be made here; the message says why and what would do."""


def own_groups(pid: int | str = "self") -> dict[str, Path]:
    """A process's memory group directory: {"v1": …} and/or {"v2": …}, from /proc/PID/cgroup
    and the cgroup mounts in /proc/self/mountinfo."""
    mounts = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, right = line.split(" - ")
        fstype, _, options = right.split()[:3]
        root, point = left.split()[3:5]
        if fstype == "cgroup2" or (fstype == "cgroup" and "memory" in options.split(",")):
            mounts.setdefault("v2" if fstype == "cgroup2" else "v1", (root, Path(point)))
    found = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        kind = "v2" if controllers == "" else "v1" if "memory" in controllers.split(",") else None
        if kind in mounts:
            root, point = mounts[kind]
            relative = path[len(root):] if path.startswith(root) and root != "/" else path
            found[kind] = point / relative.lstrip("/")
    return found


class MemoryGroup:
    """One child group with a memory limit; the counters read the same on v1 and v2."""

    def __init__(self, parent: Path, version: int, limit_bytes: int):
        self.parent, self.version, self.limit_bytes = parent, version, limit_bytes
        self.path = parent / f"{PREFIX}{os.getpid()}"

    @classmethod
    def existing(cls, path: Path, version: int) -> MemoryGroup:
        """A group that is there already (a job's own), to read its counters."""
        group = cls(path.parent, version, 0)
        group.path = path
        return group

    # ------------------------------------------------------------ making and removing

    def create(self) -> None:
        remove_stale_groups(self.parent)
        if self.version == 2:
            self._enable_memory_for_children()
        try:
            self.path.mkdir()
        except OSError as error:
            raise CannotLimit(f"cannot create a memory cgroup below {self.parent.name or '/'} "
                              f"(cgroup v{self.version}: {error.strerror}); {_REMEDY}") from None
        try:
            if self.version == 1:
                self._write("memory.limit_in_bytes", self.limit_bytes)
                # With swap, a group over its limit pages out instead of meeting the OOM killer;
                # memsw (where the kernel keeps it) caps memory and swap together.  Without swap it
                # is left alone: once set, Linux 6.18 counted the hits in neither failcnt.
                if _swap_total() and (self.path / "memory.memsw.limit_in_bytes").exists():
                    self._write("memory.memsw.limit_in_bytes", self.limit_bytes)
                self._write("memory.oom_control", 0)  # the kernel's OOM killer on, as in a container
            else:
                self._write("memory.max", self.limit_bytes)
                if (self.path / "memory.swap.max").exists():
                    self._write("memory.swap.max", 0)
        except OSError as error:
            self.path.rmdir()
            raise CannotLimit(f"cannot set a memory limit on a new cgroup ({error.strerror}); {_REMEDY}") from None

    def _enable_memory_for_children(self) -> None:
        controllers = (self.parent / "cgroup.controllers").read_text().split()
        if "memory" not in controllers:
            raise CannotLimit(f"the memory controller is not delegated to this cgroup; {_REMEDY}")
        if "memory" in (self.parent / "cgroup.subtree_control").read_text().split():
            return
        try:
            (self.parent / "cgroup.subtree_control").write_text("+memory")
        except OSError as error:  # EBUSY: processes in the group itself (cgroup v2's no-internal-process rule)
            raise CannotLimit(f"cannot give the memory controller to a child of this cgroup "
                              f"({error.strerror}); {_REMEDY}") from None

    def enter(self) -> None:
        """Move this process in; processes it forks from now on start inside."""
        self._write("cgroup.procs", os.getpid())

    def remove(self) -> None:
        """Move every process still inside (this one, a worker not yet shut down) back to the
        parent group, then remove the group; what stays charged moves to the parent."""
        for _ in range(50):
            for pid in self.pids():
                with contextlib.suppress(OSError):  # gone meanwhile
                    (self.parent / "cgroup.procs").write_text(str(pid))
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError as error:
                if error.errno != errno.EBUSY:
                    raise
                time.sleep(0.02)  # a process still leaving
        raise RuntimeError(f"memory cgroup {self.path.name} still busy: remove it with "
                           f"`python -m scenarios.memory_cgroup --clean`")

    # ------------------------------------------------------------ the kernel's counters

    def _write(self, name: str, value) -> None:
        (self.path / name).write_text(str(value))

    def _read(self, name: str) -> str:
        return (self.path / name).read_text()

    def _keyed(self, name: str) -> dict[str, int]:
        return {k: int(v) for k, v in (line.split() for line in self._read(name).splitlines())}

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in self._read("cgroup.procs").split()]
        except FileNotFoundError:
            return []

    def usage_bytes(self) -> int:
        return int(self._read("memory.usage_in_bytes" if self.version == 1 else "memory.current"))

    def current_limit(self) -> int | None:
        """The limit in force (None: unlimited; v1 writes a huge number for none)."""
        text = self._read("memory.limit_in_bytes" if self.version == 1 else "memory.max").strip()
        return None if text == "max" or int(text) >= 2**60 else int(text)

    def peak_bytes(self) -> int | None:
        name = "memory.max_usage_in_bytes" if self.version == 1 else "memory.peak"  # memory.peak: Linux 5.19+
        return int(self._read(name)) if (self.path / name).exists() else None

    def oom_kills(self) -> int:
        """Processes the kernel's OOM killer killed in this group (v1: memory.oom_control, Linux 4.13+)."""
        keyed = self._keyed("memory.oom_control" if self.version == 1 else "memory.events")
        return keyed.get("oom_kill", 0)

    def limit_hits(self) -> int:
        """Times the charge hit the limit (v1: memory.failcnt; v2: memory.events `max`)."""
        if self.version == 2:
            return self._keyed("memory.events")["max"]
        # With memsw, the kernel charges memory+swap first: a hit is counted there.
        names = ("memory.failcnt", "memory.memsw.failcnt")
        return max(int(self._read(n)) for n in names if (self.path / n).exists())


def _swap_total() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("SwapTotal:"):
            return int(line.split()[1])
    return 0


_REMEDY = ("it needs a cgroup it may create children in: cgroup v1 with a writable memory hierarchy "
           "(root, or a container run as root), or a cgroup v2 subtree delegated to this user, whose "
           "memory controller can be enabled for children (see Delegation in the kernel's cgroup-v2 guide)")


def child_group(limit_bytes: int) -> MemoryGroup:
    """A group below this process's own, limited to `limit_bytes`; `create()` makes it."""
    if not sys.platform.startswith("linux"):
        raise CannotLimit(f"memory cgroups are Linux's (this is {sys.platform})")
    own = own_groups()
    if "v1" in own:
        return MemoryGroup(own["v1"], 1, limit_bytes)
    if "v2" in own:
        return MemoryGroup(own["v2"], 2, limit_bytes)
    raise CannotLimit(f"no cgroup memory controller is mounted; {_REMEDY}")


def remove_stale_groups(parent: Path | None = None) -> list[str]:
    """Remove groups that a killed run left (its creator gone, no process inside); return their names."""
    parents = [parent] if parent else list(own_groups().values())
    removed = []
    for folder in parents:
        for path in folder.glob(f"{PREFIX}*"):
            creator = path.name[len(PREFIX):]
            if creator.isdigit() and Path(f"/proc/{creator}").exists():
                continue
            with contextlib.suppress(OSError):  # processes still inside, or removed meanwhile
                path.rmdir()
                removed.append(path.name)
    return removed


def leftover_groups() -> list[str]:
    """Names of this module's groups below this process's own (the tests assert none remain)."""
    return sorted(p.name for folder in own_groups().values() for p in folder.glob(f"{PREFIX}*"))
