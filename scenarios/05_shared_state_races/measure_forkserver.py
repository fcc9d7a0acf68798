"""Scenario 05, measure: does fixed.py's lock survive forkserver (Python 3.14's default)?

    python scenarios/05_shared_state_races/measure_forkserver.py

broken.py under forkserver repeats draws as under fork: each worker unpickles
its own copy of the marks (README, "On Python 3.14 and later").  The fix needs
care: a multiprocessing lock belongs to the context that made it.  fixed.py's
dataset, its lock made by the fork context, handed to a forkserver loader:
expect "RuntimeError: A SemLock created in a fork context is being shared with
a process in a spawn context" as the workers start, before any draw.  The same
dataset with the lock made by the loader's own context (forkserver): expect 512
draws and 0 repeats, as under fork.
"""
import multiprocessing
import time
import traceback

from torch.utils.data import DataLoader

import fixed


def main():
    forkserver = multiprocessing.get_context("forkserver")
    # The fork server imports torch before forking workers, as Python 3.14's does (top README).
    forkserver.set_forkserver_preload(["torch"])
    dataset = fixed.BagDataset()  # its lock made by fixed.CONTEXT, the fork context
    loader = DataLoader(dataset, batch_size=None, num_workers=2, multiprocessing_context=forkserver)
    started = time.perf_counter()
    try:
        next(iter(loader))
    except RuntimeError:
        traceback.print_exc()
        print(f"metric fork_lock_failed_after_s={time.perf_counter() - started:.2f}")
    fixed.CONTEXT = forkserver  # the lock and the loader from one context
    fixed.main()


if __name__ == "__main__":
    main()
