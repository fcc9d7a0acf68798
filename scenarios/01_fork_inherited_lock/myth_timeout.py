"""Scenario 01, myth check: is DataLoader(timeout=...) a fix for the hang?

    python scenarios/01_fork_inherited_lock/myth_timeout.py

broken.py again, with timeout=5.  Expect "RuntimeError: DataLoader timed out
after 5 seconds" and no batch: the wait ends, which beats waiting forever, but
the error does not say why, the workers are still stuck on the lock, and the
next epoch would stick again.  A detector, not a fix; and a timeout shorter
than the slowest healthy batch (here the first: each worker's first label
fetch) fails healthy runs too.
"""
from broken import main

if __name__ == "__main__":
    # MYTH: a timeout gets the loop past the stuck workers.
    main(timeout=5)
