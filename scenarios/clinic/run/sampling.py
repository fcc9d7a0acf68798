"""Memory sampling: USS and RSS of a script's own process and of each worker below it, and
the script's open file descriptors (what 08's own instrument counts, read by the runner)."""
from __future__ import annotations

import psutil

from scenarios.instruments import helper_kind, process_memory_mb

# A sample reads the smaps of every torch process below the script, about 6 ms each: at 0.2 s
# that took a tenth of a core during every run.
SAMPLE_EVERY_S = 0.3


class MemorySeries:
    """Every sample of a run, and the peaks and growths the runner reports as `sampled_*`."""

    def __init__(self):
        self.samples: list = []  # [seconds, {"main": MB, "workers": [MB…], "pids": [pid…]}]
        self.peak_rss = {"main": 0.0, "workers": 0.0}
        self.first_uss: dict[int, float] = {}
        self.peak_uss: dict[int, float] = {}
        self.peak_fds = 0

    def sample(self, elapsed: float, main: psutil.Process, procs: list[psutil.Process]) -> dict | None:
        """Read each process once; None when the script is exiting (nothing worth keeping)."""
        sample = {"main": None, "workers": [], "pids": []}
        for proc in procs:
            measured = process_memory_mb(proc)
            if measured is None:
                continue
            uss, rss = measured
            if proc.pid == main.pid:
                sample["main"] = round(uss, 1)
                self.peak_rss["main"] = max(self.peak_rss["main"], rss)
                try:
                    self.peak_fds = max(self.peak_fds, proc.num_fds())
                except psutil.Error:
                    pass
            elif helper_kind(proc.pid) is None:  # not torch's or multiprocessing's helpers
                sample["workers"].append(round(uss, 1))
                sample["pids"].append(proc.pid)
                self.peak_rss["workers"] = max(self.peak_rss["workers"], rss)
                self.first_uss.setdefault(proc.pid, uss)
                self.peak_uss[proc.pid] = max(self.peak_uss.get(proc.pid, 0.0), uss)
        if sample["main"] is None:
            return None
        self.samples.append([round(elapsed, 2), sample])
        return sample

    def metrics(self) -> dict:
        figures = {}
        if self.peak_uss:
            figures["sampled_worker_uss_growth_mb"] = round(
                max(self.peak_uss[pid] - self.first_uss[pid] for pid in self.peak_uss), 1)
            figures["sampled_worker_uss_peak_mb"] = round(max(self.peak_uss.values()), 1)
            figures["sampled_worker_rss_peak_mb"] = round(self.peak_rss["workers"], 1)
        if self.samples:
            figures["sampled_main_uss_peak_mb"] = max(s["main"] for _, s in self.samples)
            figures["sampled_main_rss_peak_mb"] = round(self.peak_rss["main"], 1)
            figures["sampled_main_fds_peak"] = self.peak_fds
        return figures
