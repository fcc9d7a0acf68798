"""Scenario 09, broken_main_guard: a flat training script, no main guard, under spawn.

    python scenarios/09_spawn_pitfalls/broken_main_guard.py

Expect: the spawned worker re-runs this file from the top (its "running …
as __mp_main__" line), reaches the DataLoader itself and stops with
    RuntimeError: An attempt has been made to start a new process before the
    current process has finished its bootstrapping phase. …
and the main process, a few seconds later, with
    RuntimeError: DataLoader worker (pid(s) …) exited unexpectedly
Python's check turns what would be a fork bomb into that error.
"""
import os

from torch.utils.data import DataLoader

from broken import SAMPLES, SensorReadings

print(f"running the top of {os.path.basename(__file__)} as {__name__} in pid {os.getpid()}")
# BUG: no `if __name__ == "__main__":` guard: a spawned worker imports this
# file to find what the parent pickled, and so runs the loop below itself.
loader = DataLoader(SensorReadings(SAMPLES), batch_size=64, num_workers=1,
                    multiprocessing_context="spawn")
total = sum(batch.sum().item() for batch in loader)
print(f"sum of all readings: {total:.1f}")
