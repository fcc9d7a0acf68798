"""Scenario 12, myth check: "it is a fork problem: spawn starts every worker afresh".

    python scenarios/12_identical_augmentations/myth_spawn.py

A spawned worker does start a fresh interpreter, but the dataset reaches it
pickled, and a generator pickles with its state: every worker unpickles the
same one.  forkserver (Linux's default from Python 3.14) sends the dataset the
same way.  This is broken.py with multiprocessing_context="spawn", for one
epoch (each spawned worker imports torch anew, which takes seconds).
Expect: all 128 draws duplicated, as in broken.py.
"""
from broken import main

if __name__ == "__main__":
    # MYTH: "spawned workers start clean": the dataset, generator state included, is pickled into each.
    main(context="spawn", epochs=1)
