"""Scenario 01: the fixed dataset under fork, forkserver and spawn, and what each costs.

    python scenarios/01_fork_inherited_lock/fixed_spawn.py

The fixed dataset pickles (PerWorker sends the recipe, not the cache), so
it also runs with the start methods that copy nothing from the parent.  One
epoch each; the time to the first batch includes each worker's own first
label fetch (FETCH_S) in all three, so the difference to fork is what
starting the workers costs: a fresh interpreter that imports torch again.
"""
import multiprocessing

from fixed import FETCH_S, main

if __name__ == "__main__":
    first_batch_s = {}
    for context in ("fork", "forkserver", "spawn"):
        if context in multiprocessing.get_all_start_methods():
            print(f"--- multiprocessing_context={context!r}")
            first_batch_s[context] = main(context=context)
    for context, seconds in first_batch_s.items():
        print(f"metric {context}_first_batch_s={seconds:.2f}")
        print(f"metric {context}_startup_s={seconds - FETCH_S:.2f}")
    print(f"spawn's workers needed {first_batch_s['spawn'] - first_batch_s['fork']:.1f} s "
          f"more than fork's to deliver the first batch")
