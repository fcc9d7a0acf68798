"""Each thread's CPU time, read from /proc, and the threads a process keeps busy: one rule for
scenario 21's census, the grading hook inside a worker and `doctor --pid`.

A thread is busy when it used at least a share of its process's CPU over a span of readings, and
more than a floor, and half that share in each half of the span.  The halves leave out work done once:
OpenBLAS re-creating its pool in a forked worker spins ~50 ms, a queue's feeder thread pickles its
first batch for 60-90 ms.  Both usually end before a worker's first batch; under load they can end
after it, and one CI run counted such a thread busy in 21's fixed worker (90 ms and 50 ms of CPU).
A pool thread that competes for the cores works in every stretch of the span, in both halves.
Imports nothing but os: the grading hook loads it into every worker.
"""
from __future__ import annotations

import os

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100  # 100 a second here
TICK_S = 1 / CLOCK_TICKS
BUSY_SHARE = 0.25  # of the process's CPU (or of its busiest thread's), for a thread to be busy
BUSY_MIN_S = 1.99 * TICK_S  # and two ticks (just under: readings are differences of floats)


def thread_cpu_s(pid: int | str = "self") -> dict[int, float]:
    """CPU seconds of each thread of process `pid` so far, by thread id ({} once it is gone):
    /proc/PID/task/TID/stat's utime + stime, what `top -H` and `ps -L` show."""
    seconds = {}
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return seconds
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            seconds[int(tid)] = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
        except (OSError, ValueError, IndexError):
            continue  # the thread ended between the listing and the read
    return seconds


def used(first: dict[int, float], last: dict[int, float], leave_out=()) -> dict[int, float]:
    """Each thread's CPU seconds between two readings (a thread born between them: all of its)."""
    return {tid: cpu - first.get(tid, 0.0) for tid, cpu in last.items() if tid not in leave_out}


def busy_threads(readings: list[dict[int, float]], share: float = BUSY_SHARE, floor_s: float = BUSY_MIN_S,
                 leave_out=(), of_busiest: bool = False) -> set[int]:
    """The threads busy over `readings` (thread_cpu_s taken in order): each at least `share` of
    all their CPU (`of_busiest`: of the busiest one's) and `floor_s` over the whole span, and half
    that share and a tick in each of its halves; threads in `leave_out` are not counted or summed."""
    if len(readings) < 2:
        return set()
    spans = [(readings[0], readings[-1], floor_s, share)]
    middle = middle_reading(readings, leave_out)
    if middle is not None:  # in each half, half the share: a starved pool thread's stripes vary
        spans += [(readings[0], middle, 0.99 * TICK_S, share / 2), (middle, readings[-1], 0.99 * TICK_S, share / 2)]
    found = None
    for first, last, floor, least in spans:
        cpu = used(first, last, leave_out)
        against = max(cpu.values(), default=0.0) if of_busiest else sum(cpu.values())
        here = {tid for tid, s in cpu.items() if s >= max(floor, least * against)}
        found = here if found is None else found & here
    return found


def middle_reading(readings: list[dict[int, float]], leave_out) -> dict[int, float] | None:
    """The reading that halves the span's CPU best; None where neither side would hold a third of
    it (too few readings, or the work done between two of them: then the whole span decides).
    Halving by CPU, not by readings: a worker that ran ahead of the loop may sit idle at the end."""
    totals = [sum(used(readings[0], reading, leave_out).values()) for reading in readings]
    if len(readings) < 3 or totals[-1] <= 0:
        return None
    best = min(range(1, len(readings) - 1), key=lambda i: abs(totals[i] - totals[-1] / 2))
    return readings[best] if totals[-1] / 3 <= totals[best] <= 2 * totals[-1] / 3 else None
