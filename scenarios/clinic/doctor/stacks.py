"""Reading a py-spy dump (`py-spy dump --pid`, as run/supervise.py's stack_of takes it): the
one reader of its text for the doctor, its checks and `doctor --orphans`."""
from __future__ import annotations

import re


def frame_lines(stack: str) -> list[str]:
    """The frames of a one-process dump, innermost first (py-spy indents them by four spaces;
    the main thread comes first)."""
    return [line.strip() for line in stack.splitlines() if line.startswith("    ")]


def frames(stack: str, limit: int = 4) -> str:
    """The innermost frames, one line: what the process waits in (or the dump's first line,
    which says why there are no frames)."""
    lines = frame_lines(stack)
    return " ← ".join(lines[:limit]) if lines else stack.strip().splitlines()[0][:160] if stack.strip() else ""


def processes(stacks: str) -> list[tuple[int, str]]:
    """(pid, that process's dump) for each process of several dumps printed one after another."""
    found = []
    for block in re.split(r"(?m)^(?=Process \d+)", stacks):
        match = re.match(r"Process (\d+)", block)
        if match:
            found.append((int(match.group(1)), block))
    return found


def main_thread_state(block: str) -> str:
    """py-spy's word for the main thread's state ("idle", "active"…), where the dump has one."""
    state = re.search(r'^Thread \d+ \(([^)]*)\): "MainThread"', block, re.MULTILINE)
    return state.group(1) if state else ""
