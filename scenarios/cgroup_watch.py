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
    """Every SAMPLE_EVERY_S: the group's charge, its OOM-kill count, and each process's RSS and
    what the kernel ranks it by.  `victims`: each process that vanished as the count rose, with
    the last sample that had it."""

    def __init__(self, group, main_pid: int | None = None):
        super().__init__(daemon=True)
        self.group, self.started = group, time.monotonic()
        self.main_pid = main_pid or os.getpid()
        self.samples: list[tuple[float, int, int, dict]] = []  # (t, charge bytes, oom kills, {pid: (rss, badness)})
        self.names: dict[int, str] = {self.main_pid: "main"}
        self.victims: dict[int, tuple] = {}
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
        if self.samples and kills > self.samples[-1][2]:
            # A kill may fall between this sample's two reads, so a victim may already be missing
            # from the sample before: look back over the last three.
            for earlier in reversed(self.samples[-3:]):  # the latest that still had it
                for pid in earlier[3]:
                    if pid not in procs and pid not in self.victims:
                        self.victims[pid] = earlier
        self.samples.append((round(time.monotonic() - self.started, 3), charge, kills, procs))

    def stop(self) -> None:
        self._done.set()
        self.join()
        with contextlib.suppress(OSError):
            self._sample()

    def report(self) -> None:
        """Print the series (one line a tenth of a second, and each victim's last) and the figures."""
        limit = self.group.limit_bytes / MIB
        lasts = [id(sample) for sample in self.victims.values()]
        for i, sample in enumerate(self.samples):
            t, charge, kills, procs = sample
            if i % 5 == 0 or id(sample) in lasts or i == len(self.samples) - 1:
                rss = " ".join(f"{self.names[p]}={m[0]}" for p, m in sorted(procs.items()))
                print(f"memory t={t:.2f} charge={charge / MIB:.1f} limit={limit:g} oom_kills={kills} rss: {rss}")
        print(f"metric limit_mb={limit:g}")
        print(f"metric peak_charge_mb={(self.group.peak_bytes() or max(s[1] for s in self.samples)) / MIB:.1f}")
        print(f"metric oom_kills={self.group.oom_kills()}")
        print(f"metric limit_hits={self.group.limit_hits()}")
        if self.group.oom_kills():
            self._report_victims()

    def _report_victims(self) -> None:
        """Each process killed, in the kernel's order where its log is readable (else by rank),
        with its rank in the group at its last sample; figures for the first."""
        log = _kernel_kills()
        if not self.victims:  # every kill fell between samples: the log still names them
            self.victims = {pid: s for s in self.samples for pid in s[3] if pid in log}
        rank = {pid: _rank(pid, s[3]) for pid, s in self.victims.items()}
        order = sorted(self.victims, key=lambda pid: (list(log).index(pid) if pid in log else len(log), rank[pid]))
        for pid in order:
            when, before = self.victims[pid][0], self.victims[pid][3]
            others = ", ".join(f"{self.names[p]} {m[1]} MiB" for p, m in before.items() if p != pid)
            print(f"the kernel's OOM killer killed {self.names[pid]} (pid {pid}): {before[pid][1]} MiB of RSS, "
                  f"page tables and swap, rank {rank[pid]} of {len(before)} in the group at t={when:.2f} s, "
                  f"its last sample; the others: {others}")
            print(f"kernel log: {log[pid]}" if pid in log else
                  "kernel log: not readable here (dmesg needs root or kernel.dmesg_restrict=0)")
        if order:
            first = order[0]
            before = self.victims[first][3]
            print(f"metric victim_is_worker={int(first != self.main_pid)}")
            print(f"metric victim_rank={rank[first]}")
            print(f"metric victim_rss_mb={before[first][0]}")
            if self.main_pid in before:
                print(f"metric main_rss_before_kill_mb={before[self.main_pid][0]}")


# The kernel ranks the group's processes at the moment of the kill, up to a sample after ours,
# while the workers still grow (up to 150 MiB/s measured in scenario 19, 3 MiB a sample): two
# processes closer than this share of the victim's size are tied.  Two workers of 276.8 and 277.5
# MiB, one sample before the kill, are two candidates the sample cannot tell apart.
TIED_SHARE = 0.02


def _rank(pid: int, sizes: dict) -> int:
    """1 + the processes that were larger than `pid` by more than a tie, by what the kernel ranks."""
    victim = sizes[pid][1]
    return 1 + sum(other[1] > victim * (1 + TIED_SHARE) for p, other in sizes.items() if p != pid)


def _kernel_kills() -> dict[int, str]:
    """The kernel's own line for each OOM kill in its log, oldest first ("Memory cgroup out of
    memory: Killed process …"); empty where the log is not readable."""
    try:
        log = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    kills = {}
    for line in log.splitlines():
        if "Killed process " in line:
            text = line.split("] ", 1)[-1]
            kills.pop(pid := int(text.split("Killed process ")[1].split()[0]), None)
            kills[pid] = text
    return kills
