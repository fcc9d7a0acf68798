"""The signals a process handles or ignores, read from /proc/PID/status: what the kernel will do with a
SIGTERM, whatever the process's Python says (a forked worker keeps its parent's Python table of handlers
while torch's C handler has replaced the one for SIGTERM).  Linux only; elsewhere every set is empty.

Shared by the doctor's reading of a running job (clinic/doctor/processes.py) and the observer inside a
run (clinic/run/loop_hook.py, worker_hook.py), so that both read a mask one way."""
from __future__ import annotations

import signal
from pathlib import Path


def caught_signals(pid: int | str = "self", field: str = "SigCgt") -> set[int]:
    """The signals a process has handlers for (SigCgt), or ignores (field="SigIgn")."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return set()
    mask = int(next((line.split()[1] for line in status.splitlines() if line.startswith(f"{field}:")), "0"), 16)
    return {n for n in range(1, 65) if mask & (1 << (n - 1))}


def sigterm_disposition(pid: int | str = "self") -> str:
    """'ignored', 'caught' (a handler: Python's, torch's worker handler, a framework's) or 'default' (dies)."""
    if signal.SIGTERM in caught_signals(pid, "SigIgn"):
        return "ignored"
    return "caught" if signal.SIGTERM in caught_signals(pid) else "default"


def python_handler() -> str | None:
    """This process's Python SIGTERM handler as module:name, or None.  In a forked worker a handler equal to
    its parent's is the parent's table, inherited: torch's C handler has replaced it; another is its own."""
    handler = signal.getsignal(signal.SIGTERM)
    if not callable(handler):
        return None
    kind = handler if hasattr(handler, "__qualname__") else type(handler)  # an instance with __call__
    return f"{getattr(kind, '__module__', '')}:{getattr(kind, '__qualname__', '')}"
