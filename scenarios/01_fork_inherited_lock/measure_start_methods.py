"""Scenario 01, measurement: what each start method costs the fixed dataset.

    python scenarios/01_fork_inherited_lock/measure_start_methods.py

fixed.py's dataset pickles (PerWorker sends the recipe, not the cache), so it
also runs under forkserver and spawn, which copy nothing from this process.
One epoch under each.  Every worker's first batch waits for its own first label
fetch (FETCH_S); what is left is what starting the workers cost.  The line this
file prints when it is imported shows where it runs again: in every spawned
worker, and in every forkserver worker too on a Python without the fix for
CPython gh-126631 (3.11 is one), where the server never preloads the main
script.  Such a worker imports this script, and so torch, all over again.
"""
import multiprocessing
import os

from fixed import FETCH_S, main

# Runs wherever this file is imported: here, and in each worker that re-runs the main script.
print(f"measure_start_methods.py imported as {__name__} in pid {os.getpid()}", flush=True)

if __name__ == "__main__":
    first_batch_s = {}
    for context in ("fork", "forkserver", "spawn"):
        if context in multiprocessing.get_all_start_methods():
            print(f"--- multiprocessing_context={context!r}", flush=True)
            first_batch_s[context] = main(context=context)
    for context, seconds in first_batch_s.items():
        print(f"metric {context}_first_batch_s={seconds:.2f}")
        print(f"metric {context}_startup_s={seconds - FETCH_S:.2f}")
    print(f"spawn's workers needed {first_batch_s['spawn'] - first_batch_s['fork']:.1f} s "
          f"more than fork's to deliver the first batch")
