"""Watching a memory cgroup from inside it: the charge, each process's RSS and the kernel's count.

Not for running: scenarios/memory_cgroup.py starts a `GroupWatch` for the duration of a
`memory_limit` (or of `run_limited`) and prints its report when the run ends, however
it ends.  After an OOM kill the report says which process went, how it ranked, and the
kernel's own line about it where the kernel log is readable.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from pathlib import Path

MIB = 2**20
SAMPLE_EVERY_S = 0.02


def _rss_and_badness(pid: int) -> tuple[float, float] | None:
    """RSS of a live process and what the kernel's oom_badness() ranks it by (RSS + page tables
    + swap), both in MiB; None once it is gone or a zombie.  /proc/PID/oom_score, the same
    figure scaled to the machine's whole RAM, moves one step per tens of MiB here: too coarse."""
    try:
        fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
        kib = {name: int(fields.get(name, "0 kB").split()[0]) for name in ("VmRSS", "VmPTE", "VmSwap")}
    except (OSError, ValueError):
        return None
    if not kib["VmRSS"]:
        return None
    return round(kib["VmRSS"] / 1024, 1), round(sum(kib.values()) / 1024, 1)


class GroupWatch(threading.Thread):
    """Every SAMPLE_EVERY_S: the group's charge, its OOM-kill count, and the RSS of each process and what
    the kernel ranks it by, of each process inside.  `victim` is the process that vanished when the count rose."""

    def __init__(self, group, main_pid: int | None = None):
        super().__init__(daemon=True)
        self.group, self.started = group, time.monotonic()
        self.main_pid = main_pid or os.getpid()
        self.samples: list[tuple[float, int, int, dict]] = []  # (t, charge bytes, oom kills, {pid: (rss, badness)})
        self.names: dict[int, str] = {self.main_pid: "main"}
        self.victim: tuple[int, tuple] | None = None  # (pid, the last sample that had it)
        self._done = threading.Event()
        self.start()

    def run(self) -> None:
        while not self._done.is_set():
            with contextlib.suppress(OSError):
                self._sample()
            self._done.wait(SAMPLE_EVERY_S)

    def _sample(self) -> None:
        kills, charge = self.group.oom_kills(), self.group.usage_bytes()
        procs = {pid: m for pid in self.group.pids() if (m := _rss_and_badness(pid))}
        for pid in sorted(procs):
            self.names.setdefault(pid, f"worker{len(self.names)}")
        if self.samples and kills > self.samples[-1][2] and self.victim is None:
            # The kill may fall between this sample's two reads, so the victim may already be
            # missing from the sample before: the last one (of three) that still had it.
            for earlier in reversed(self.samples[-3:]):
                gone = [pid for pid in earlier[3] if pid not in procs]
                if gone:
                    self.victim = (gone[0], earlier)
                    break
        self.samples.append((round(time.monotonic() - self.started, 3), charge, kills, procs))

    def stop(self) -> None:
        self._done.set()
        self.join()
        with contextlib.suppress(OSError):
            self._sample()

    def report(self) -> None:
        """Print the series (one line a tenth of a second, and the last before a kill) and the figures."""
        limit = self.group.limit_bytes / MIB
        last_before = self.victim[1] if self.victim else None
        for i, sample in enumerate(self.samples):
            t, charge, kills, procs = sample
            if i % 5 == 0 or sample is last_before or i == len(self.samples) - 1:
                rss = " ".join(f"{self.names[p]}={m[0]}" for p, m in sorted(procs.items()))
                print(f"memory t={t:.2f} charge={charge / MIB:.1f} limit={limit:g} oom_kills={kills} rss: {rss}")
        peak = self.group.peak_bytes() or max(s[1] for s in self.samples)
        print(f"metric limit_mb={limit:g}")
        print(f"metric peak_charge_mb={peak / MIB:.1f}")
        print(f"metric oom_kills={self.group.oom_kills()}")
        print(f"metric limit_hits={self.group.limit_hits()}")
        if self.victim is None and self.group.oom_kills():  # missed between samples: ask the kernel's log
            seen = [(pid, sample) for sample in self.samples for pid in sample[3]]
            self.victim = next(((pid, sample) for pid, sample in reversed(seen) if kernel_log_line(pid)), None)
        if self.victim:
            self._report_victim(*self.victim)

    def _report_victim(self, pid: int, last: tuple) -> None:
        when, before = last[0], last[3]
        ranked = sorted(before, key=lambda p: -before[p][1])
        others = ", ".join(f"{self.names[p]} {before[p][1]} MiB" for p in ranked if p != pid)
        print(f"the kernel's OOM killer killed {self.names[pid]} (pid {pid}): {before[pid][1]} MiB of RSS, "
              f"page tables and swap, rank {ranked.index(pid) + 1} of {len(ranked)} in the group "
              f"at t={when:.2f} s, its last sample; the others: {others}")
        print(f"metric victim_is_worker={int(pid != self.main_pid)}")
        print(f"metric victim_rank={ranked.index(pid) + 1}")
        print(f"metric victim_rss_mb={before[pid][0]}")
        print(f"metric main_rss_before_kill_mb={before[self.main_pid][0]}")
        line = kernel_log_line(pid)
        print(f"kernel log: {line}" if line else
              "kernel log: not readable here (dmesg needs root or kernel.dmesg_restrict=0)")


def kernel_log_line(pid: int) -> str | None:
    """The kernel's own line for the kill of `pid` ("Memory cgroup out of memory: Killed process …")."""
    try:
        log = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    hits = [line for line in log.splitlines() if f"Killed process {pid} (" in line]
    return hits[-1].split("] ", 1)[-1] if hits else None
