"""Scenario 04, fixed, refusing: a batch that no setting fits is refused before any worker starts.

    python scenarios/04_dev_shm_exhaustion/fixed_batch_too_big.py

fixed.py with batches of 160 crops (17 MiB) in the same 16 MiB /dev/shm: even one worker
prefetching one batch cannot fit, so plan_in_flight refuses, naming the figures and the
remedies (--shm-size, --ipc=host, a smaller batch, num_workers=0), instead of a job that
dies or stalls mid-epoch.
"""
import sys

from fixed import main
from fixes.memory_in_flight import InFlightBudgetError

if __name__ == "__main__":
    try:
        main(batch_size=160)
    except InFlightBudgetError as refused:  # FIX: stop before any worker starts, and say what to do
        sys.exit(f"error: {refused}")
