"""Scenario 33, measured: broken.py under forkserver (Linux's default from Python 3.14) and spawn.

    python scenarios/33_unpicklable_sample_hangs/measure_start_methods.py

The dataset itself pickles (the file is opened in each worker, on first use),
so the workers start under every start method; what does not pickle is each
sample, and every worker's queue pickles its batches in a feeder thread,
whoever started the worker.  Expect, under each method, the same pickling
tracebacks and no batch, until timeout=20 ends the wait: the start method
neither causes the hang nor cures it.
"""
import time

from broken import main

# Long enough for a spawned worker to import torch and make its first batches on a busy machine:
# the wait then ends on a lost batch, not on a slow start.
TIMEOUT_S = 20

if __name__ == "__main__":
    for context in ("forkserver", "spawn"):
        print(f"--- multiprocessing_context={context!r}", flush=True)
        started = time.perf_counter()
        try:
            main(timeout=TIMEOUT_S, context=context)
        except RuntimeError as err:
            print(f"{context}: no batch; {err}", flush=True)
            print(f"metric {context}_timed_out_after_s={time.perf_counter() - started:.2f}", flush=True)
