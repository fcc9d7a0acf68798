"""Scenario 09, fixed_main_guard: the same script, its work behind the main guard.

    python scenarios/09_spawn_pitfalls/fixed_main_guard.py

Expect: one epoch through a spawned worker and the sum of the readings.
The worker still imports this file (as __mp_main__, its own "running …"
line) but stops at the guard.
"""
import os

from torch.utils.data import DataLoader

from broken import SAMPLES, SensorReadings

print(f"running the top of {os.path.basename(__file__)} as {__name__} in pid {os.getpid()}")


def main():
    loader = DataLoader(SensorReadings(SAMPLES), batch_size=64, num_workers=1,
                        multiprocessing_context="spawn")
    total = sum(batch.sum().item() for batch in loader)
    print(f"sum of all readings: {total:.1f}")


# FIX: only the process started from the command line runs main(); workers stop here.
if __name__ == "__main__":
    main()
