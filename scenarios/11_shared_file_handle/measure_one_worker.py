"""Scenario 11, why the bug hides (1): the broken loader with a single worker.

    python scenarios/11_shared_file_handle/measure_one_worker.py

Only one process ever moves the shared offset, so every seek is followed by
its own read.  This is what "debug with num_workers=1" shows: a clean epoch.
Expect: every sample matches its checksum, on a cold cache too.
"""
from broken import main

if __name__ == "__main__":
    main(num_workers=1)
