"""A memory limit of the script's own: a real memory cgroup and the kernel's own OOM killer.

    with memory_limit(320):   # this process moves in; workers forked later are born inside
        for batch in loader: ...
    # on leaving: the kernel's counters as `metric` lines, every process moved back, group removed

What a container (`docker run --memory`), a Kubernetes pod's limit or a Slurm job's
cgroup does to a training job, made here for one run: a child group below this
process's own, with a limit, where the kernel's OOM killer acts when the group's
charge cannot stay under it.  It works where the group can be made:
- cgroup v1: the memory hierarchy is writable below this process's group;
- cgroup v2: this process's group is writable and can give the memory controller to a
  child (a delegated subtree that holds no process of its own; not tried on a v2 machine).
Elsewhere `memory_limit` ends the script with "cannot run here" (exit status 3).

Pages are charged to the group of the process that first touches them: what this
process allocated before moving in (torch's import, for one) stays charged outside.
The group counts what the run allocates after: the data, each worker's copies, batches.
The group itself, made, read and removed, is memory_group.MemoryGroup; while the body runs,
cgroup_watch.GroupWatch samples the charge and each process's RSS.

Cleanup: a group is named `dataloader-clinic-<pid>`; leaving the `with` moves every
process still in it back to the parent group and removes it, whatever ended the run.
A process killed before it can (SIGKILL at a runner's time limit) leaves an empty group
behind: the next `memory_limit` removes it, as does `python -m scenarios.memory_cgroup
--clean`, once its creator is gone.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

from scenarios.cgroup_watch import GroupWatch
from scenarios.memory_group import MIB, CannotLimit, MemoryGroup, child_group, own_groups, remove_stale_groups

GROUP_ENV = "CLINIC_MEMORY_GROUP"  # set by run_limited: the group its child's memory_limit enters


def memory_cgroup_of(pid: int) -> dict:
    """The memory cgroup of process `pid` as MemoryGroup's counters read it: usage, limit (None:
    none) and the kernel's OOM-kill count; {} where there is none or it cannot be read."""
    try:
        groups = own_groups(pid)
    except (OSError, ValueError):
        return {}
    for kind, path in groups.items():
        group = MemoryGroup.existing(path, version=2 if kind == "v2" else 1)
        try:
            return {"usage": group.usage_bytes(), "limit": group.current_limit(), "oom_kills": group.oom_kills()}
        except (OSError, ValueError, KeyError):
            continue
    return {}


def problem() -> str | None:
    """Why no memory cgroup can be made here, or None when one can (made and removed to find out)."""
    try:
        group = child_group(64 * MIB)
        group.create()
        group.remove()
    except (CannotLimit, OSError) as error:
        return str(error)
    return None


@contextlib.contextmanager
def memory_limit(limit_mb: float):
    """Run the body in a memory cgroup of its own limited to `limit_mb` MiB (see the module
    docstring); on a machine without one, end the script with 'cannot run here' (exit 3)."""
    from scenarios.host import cannot_run

    given = os.environ.pop(GROUP_ENV, None)
    if given:  # run_limited made the group, watches it from outside and removes it
        Path(given, "cgroup.procs").write_text(str(os.getpid()))
        yield None
        return
    try:
        group = child_group(int(limit_mb * MIB))
        group.create()
    except CannotLimit as error:
        cannot_run(str(error))
    watch = None
    try:
        group.enter()
        watch = GroupWatch(group)
        yield group
    finally:
        try:
            if watch:
                watch.stop()
                watch.report()
        finally:
            group.remove()


def run_limited(limit_mb: float, command: list[str]) -> int:
    """Run `command` (a Python script whose main() enters `memory_limit`) as the training
    process, in a group this process makes, limited to `limit_mb` MiB; this process stays
    outside to watch, report and remove the group even when the kernel kills the training
    process itself.  Returns its exit code (-9: killed by SIGKILL)."""
    from scenarios.host import cannot_run

    try:
        group = child_group(int(limit_mb * MIB))
        group.create()
    except CannotLimit as error:
        cannot_run(str(error))
    try:
        sys.stdout.flush()
        child = subprocess.Popen(command, env=dict(os.environ, **{GROUP_ENV: str(group.path)}))
        watch = GroupWatch(group, main_pid=child.pid)
        code = child.wait()
        waited = time.monotonic()
        while group.pids() and time.monotonic() - waited < 15:  # orphaned workers notice within 5 s
            time.sleep(0.1)
        watch.stop()
        watch.report()
        print(f"metric workers_outlived_main_s={time.monotonic() - waited:.1f}")
        return code
    finally:
        group.remove()


def main(argv: list[str]) -> int:
    if argv == ["--clean"]:
        removed = remove_stale_groups()
        print(f"removed {len(removed)} group(s) left by killed runs: {' '.join(removed) or '-'}")
        return 0
    if argv == ["--probe"]:
        why_not = problem()
        print(f"cannot run here: {why_not}" if why_not else "a memory cgroup can be made here")
        return 3 if why_not else 0
    print("usage: python -m scenarios.memory_cgroup --probe | --clean", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
