"""Scenario 33, measured: broken.py's dataset with num_workers=0.

    python scenarios/33_unpicklable_sample_hangs/measure_without_workers.py

Without workers nothing is pickled: the main process calls __getitem__ itself
and keeps the samples, open file included.  Expect all eight batches and
their captions, as fixed.py gives them: the "works with num_workers=0, hangs
with workers" that sends users looking for a deadlock.
"""
from broken import main

if __name__ == "__main__":
    main(num_workers=0)
