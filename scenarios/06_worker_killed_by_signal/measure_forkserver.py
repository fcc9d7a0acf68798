"""Scenario 06, measure: the same crash under fork and under forkserver (Python 3.14's default).

    python scenarios/06_worker_killed_by_signal/measure_forkserver.py

broken.py with its loader started by forkserver, as a script that names no
start method gets on Python 3.14; then fixed.py under forkserver.
A forked worker is a child of the training process: the kernel tells it at once
(SIGCHLD) and PyTorch names the signal.  A worker started by forkserver is a
child of the fork server: the training process learns of the death only when
it has waited MP_STATUS_CHECK_INTERVAL (5 s) for a batch and finds the worker
gone.  Under fork (broken.py) "is killed by signal: Segmentation fault" comes
at once; under forkserver expect only "DataLoader worker (pid(s) …) exited
unexpectedly", some 5 s after the last batch, the signal named nowhere but in
the worker's own "Unexpected segmentation fault" line.  fixed.py under
forkserver: 255 of 255 samples read, its check does not depend on the start method.
"""
import multiprocessing
import time
import traceback

from torch.utils.data import DataLoader

import broken
import fixed

last_batch_at = 0.0


class ForkserverLoader(DataLoader):
    """broken.py's loader with the start method Python 3.14 picks, timing each batch."""

    def __init__(self, *args, **options):
        super().__init__(*args, **{**options, "multiprocessing_context": "forkserver"})

    def __iter__(self):
        global last_batch_at
        last_batch_at = time.perf_counter()
        for batch in super().__iter__():
            yield batch
            last_batch_at = time.perf_counter()


def main():
    # The fork server imports torch before forking workers, as Python 3.14's does (top README).
    multiprocessing.set_forkserver_preload(["torch"])
    broken.DataLoader = fixed.DataLoader = ForkserverLoader
    try:
        broken.main()
    except RuntimeError as error:
        waited = time.perf_counter() - last_batch_at
        traceback.print_exc()
        chain = f"{error} <- {error.__cause__!r}"
        print(f"forkserver: {chain}, {waited:.2f} s after the last batch")
        print(f"metric forkserver_error_after_s={waited:.2f}")
        print(f"metric forkserver_signal_named={int('killed by signal' in chain)}")
    fixed.main()


if __name__ == "__main__":
    main()
