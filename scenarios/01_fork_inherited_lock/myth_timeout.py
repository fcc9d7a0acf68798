"""Scenario 01, myth check: is DataLoader(timeout=...) a fix for the hang?

    python scenarios/01_fork_inherited_lock/myth_timeout.py

The broken script again, with timeout=5.  The hang becomes an error after
5 s, which beats waiting forever, but the error does not say why: the
workers are still stuck on the lock, and the next epoch would stick again.
A detector, not a fix; and a timeout shorter than the slowest healthy batch
(here the first: each worker's first label fetch) fails healthy runs too.
"""
from broken import main

if __name__ == "__main__":
    main(timeout=5)
