"""`python -m scenarios doctor --orphans [--kill] [--json]`: DataLoader workers and fork servers
whose training process is gone (scenario 20), still holding memory.

A candidate is a DataLoader worker by what it runs (processes.runs_worker_loop: the signal
handlers torch's worker loop installs, torchdata's too); a fork server by its command line.
It is an orphan when what started it is gone: its parent is init, or a process that is no
trainer (not Python with torch loaded: a subreaper such as a container's init or the runner's
reaper), or a fork server that is itself an orphan.
"""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
import time

import psutil

from scenarios.clinic.doctor.findings import Finding, Findings, readable
from scenarios.clinic.doctor.job import FORK_SERVER
from scenarios.clinic.doctor.processes import command_of, maps_of, runs_worker_loop
from scenarios.clinic.doctor.stacks import frames
from scenarios.host import EXIT_NOT_AS_EXPECTED, EXIT_OK


@dataclasses.dataclass
class Orphan:
    pid: int
    kind: str           # "worker" | "fork server"
    age_s: float
    uss_mb: float | None
    command: str
    waits_in: str

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _kind(proc: psutil.Process) -> str | None:
    command = command_of(proc)
    if FORK_SERVER in command and FORK_SERVER not in command_of(proc.parent() or proc):
        return "fork server"
    if runs_worker_loop(proc.pid):
        return "worker"
    return None


def _is_trainer(proc: psutil.Process) -> bool:
    return "python" in command_of(proc) and "torch" in maps_of(proc.pid) and _kind(proc) is None


def _orphaned(proc: psutil.Process, kind: str) -> bool:
    parent = proc.parent()
    if parent is None or parent.pid == 1:
        return True
    if kind == "worker" and FORK_SERVER in command_of(parent):
        return _orphaned(parent, "fork server")  # a forkserver worker goes with its fork server
    return not _is_trainer(parent)


def find_orphans(stacks: bool = True) -> list[Orphan]:
    from scenarios.clinic.run.supervise import stack_of

    found = []
    for proc in psutil.process_iter():
        if proc.pid == os.getpid():
            continue
        try:  # a zombie (a worker that finished, not yet reaped) holds nothing and cannot be ended
            kind = None if proc.status() == psutil.STATUS_ZOMBIE else _kind(proc)
            if kind is None or not _orphaned(proc, kind):
                continue
            memory = proc.memory_full_info()
            found.append(Orphan(proc.pid, kind, time.time() - proc.create_time(), memory.uss / 2**20,
                                command_of(proc)[:200],
                                frames(stack_of(proc.pid, nonblocking=True, timeout_s=4)) if stacks else ""))
        except (psutil.Error, OSError):
            continue
    return found


def as_findings(orphans: list[Orphan]) -> Findings:
    """What the orphans mean, in the doctor's one shape: a risk of scenario 20 where any is left."""
    from scenarios.clinic.doctor.checks import s20_orphaned_workers_after_sigkill as s20

    if not orphans:
        return Findings(header="orphans")
    held = sum(o.uss_mb or 0 for o in orphans)
    pids = ", ".join(str(o.pid) for o in orphans[:8]) + (", …" if len(orphans) > 8 else "")
    check = "workers-outlive-the-job"
    return Findings([Finding(s20.SCENARIO, "risk", check,
                             f"{len(orphans)} DataLoader process(es) whose training process is gone ({pids}) hold "
                             f"{held:,.0f} MB of private memory", s20.FIXES[check])], header="orphans")


def main(kill: bool = False, as_json: bool = False) -> int:
    orphans = find_orphans()
    if as_json:  # the doctor's one shape, with the process list beside the findings
        print(json.dumps(as_findings(orphans).as_json(orphans=[o.as_dict() for o in orphans]), indent=1))
    elif not orphans:
        print("no orphaned DataLoader worker or fork server found")
    else:
        held = sum(o.uss_mb or 0 for o in orphans)
        print(f"{len(orphans)} orphaned DataLoader process(es), {held:,.0f} MB of private memory held "
              "(scenario 20: scenarios/20_orphaned_workers_after_sigkill/README.md):")
        for o in orphans:
            print(readable(f"  {o.pid:>7}  {o.kind:<11} {o.age_s:>7.0f} s  {o.uss_mb or 0:>7,.0f} MB  "
                           f"{o.command}")[:110]
                  + (f"\n           waits in: {o.waits_in}" if o.waits_in else ""))
    if kill and orphans:
        for o in orphans:
            try:
                os.kill(o.pid, signal.SIGKILL)
            except OSError as err:
                print(f"  could not end {o.pid}: {err.strerror}", file=sys.stderr)
        if not as_json:
            print(f"ended {len(orphans)} process(es) with SIGKILL")
    return EXIT_NOT_AS_EXPECTED if orphans else EXIT_OK
