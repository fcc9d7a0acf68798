"""Scenario 01: does multiprocessing_context="spawn" alone fix the broken script?

    python scenarios/01_fork_inherited_lock/spawn_needs_pickle.py

A spawned (or forkserver) worker starts from a fresh interpreter and gets the
dataset by pickle, not by copying memory, so no locked lock can reach it.
But that is also its demand: everything the dataset holds must pickle, and
a cache with a lock and an Event does not.  The script fails before any
worker runs.
"""
from broken import main

if __name__ == "__main__":
    main(context="spawn")
