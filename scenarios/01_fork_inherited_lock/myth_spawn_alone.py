"""Scenario 01, myth check: does a start method other than fork end the hang on its own?

    python scenarios/01_fork_inherited_lock/myth_spawn_alone.py

The usual advice for a fork problem: multiprocessing_context="spawn", or
"forkserver" (Linux's default from Python 3.14).  broken.py under each: no
worker is a fork of this process, so none can inherit its locked lock; but each
must receive the dataset by pickle, and the label cache holds a lock.  Expect
PyTorch's warning "Got pickle error when attempting to start a worker Process"
(printed once), and for both "TypeError: cannot pickle '_thread.lock' object"
at once, as the loop starts: no hang, and no batch either.
"""
import sys
import time
import traceback

from broken import main

if __name__ == "__main__":
    failed = []
    for context in ("forkserver", "spawn"):
        started = time.perf_counter()
        try:
            # MYTH: a worker that is not forked from this process is safe from its locks.
            main(context=context)
        except TypeError:
            traceback.print_exc()
            print(f"metric {context}_failed_after_s={time.perf_counter() - started:.2f}")
            failed.append(context)
    if failed:
        sys.exit(f"no batch under {' or '.join(failed)}: the dataset must pickle, and its lock does not")
