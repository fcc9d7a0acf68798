"""What a worker's loop thread does while one fetch lasts long: waits on a read (a socket, a pipe, a
file), sleeps, waits on a lock, or computes.  Read from /proc/self/task/TID/syscall, the system call a
thread is blocked in ("running" while it computes), a few times a second, only while a fetch has
lasted more than LONG_S.  31's stall must stay a read that waits: a fetch that sleeps and then raises
a made-up error is not the stall bounded by a timeout.

The numbers are each architecture's own (the kernel's unistd tables, x86_64 and arm64: a Mac's Linux
container); elsewhere every reading is "other" and nothing is judged on it.
"""
from __future__ import annotations

import os
import platform
import threading
import time

LONG_S = 1.0     # a fetch longer than this is watched
EVERY_S = 0.25   # between two readings of the thread's system call
# Reported after this many readings of one fetch (about 2 s and 5 s into it), then no more: a record
# written all through a hang would tell the doctor's run-watching that the run is alive (a stall is
# 10 s with no record), and 31's stuck rank is judged within seconds.
REPORTED_AT = (4, 16)
_KINDS = {
    "x86_64": {"read": {0, 7, 17, 19, 23, 42, 43, 45, 47, 232, 270, 271, 281, 288, 295, 299, 441},
               "sleep": {35, 230}, "lock": {202}},
    "aarch64": {"read": {22, 63, 65, 67, 69, 72, 73, 202, 203, 207, 212, 242, 243, 441},
                "sleep": {101, 115}, "lock": {98}},
}
KINDS = _KINDS.get(platform.machine(), {})


def kind_of(syscall: str) -> str:
    """'read', 'sleep', 'lock', 'running' or 'other' for the first field of /proc/…/syscall."""
    if syscall.startswith("running"):
        return "running"
    number = syscall.split(" ", 1)[0]
    if not number.lstrip("-").isdigit():
        return "other"
    return next((kind for kind, numbers in KINDS.items() if int(number) in numbers), "other")


def _reading(tid: int) -> str:
    try:
        with open(f"/proc/self/task/{tid}/syscall") as syscall:
            return kind_of(syscall.read())
    except OSError:
        return "other"


def watch(clock: dict, report) -> None:
    """In a daemon thread: while the fetch that began at clock['got_at'] lasts past LONG_S, count what
    the calling thread is found doing and hand report() the counts ({kind: readings}) at REPORTED_AT."""
    tid = threading.get_native_id()

    def run():
        began, counts = None, {}
        while True:
            time.sleep(EVERY_S)
            got_at = clock.get("got_at")
            if got_at is None or time.monotonic() - got_at < LONG_S:
                continue
            if got_at != began:
                began, counts = got_at, {}
            kind = _reading(tid)
            counts[kind] = counts.get(kind, 0) + 1
            if sum(counts.values()) in REPORTED_AT:
                report(dict(counts))

    if os.path.exists(f"/proc/self/task/{tid}/syscall"):
        threading.Thread(target=run, name="clinic-blocked", daemon=True).start()
