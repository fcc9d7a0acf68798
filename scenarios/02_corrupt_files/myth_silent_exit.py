"""Scenario 02, myth check: do workers that raise "exit silently"?

    python scenarios/02_corrupt_files/myth_silent_exit.py

"Why are DataLoader workers exiting unexpectedly?" says an exception makes
the worker exit silently and the DataLoader only notices the missing process
later.  This runs broken.py's dataset, catches what comes out of each `next()`,
and counts: every worker exception reaches the main process with the worker's
own traceback, and both workers are still alive afterwards.  (A native crash,
such as a segfault in a decoder, is different: then the worker dies and its
traceback is lost.)  Catching there is no fix either: each failing batch takes
its good images with it.
"""
import sys
import tempfile

import psutil
from torch.utils.data import DataLoader

from broken import ImageFolderDataset
from _image_corpus import UNREADABLE, write_corpus


def main():
    with tempfile.TemporaryDirectory() as root:
        corpus = write_corpus(root)
        loader = DataLoader(ImageFolderDataset(root), batch_size=8, num_workers=2,
                            multiprocessing_context="fork")
        batches, consumed, errors, with_traceback = iter(loader), 0, 0, 0
        workers_alive = []
        for step in range(len(loader)):
            # MYTH: a worker that raises "exits silently", so this except would never run.
            try:
                consumed += len(next(batches)[2])
            except Exception as err:
                errors += 1
                with_traceback += "Original Traceback" in str(err) and "__getitem__" in str(err)
                workers_alive.append(sum(p.status() != psutil.STATUS_ZOMBIE
                                         for p in psutil.Process().children()))
                first, last = str(err).splitlines()[0], str(err).strip().splitlines()[-1]
                print(f"batch {step:2d}: {first} -> {last}; workers alive: {workers_alive[-1]}")
        readable = sum(kind not in UNREADABLE for kind in corpus.values())
        print(f"metric worker_errors_reraised={errors}")
        print(f"metric errors_with_original_traceback={with_traceback}")
        print(f"metric workers_alive_after_error_min={min(workers_alive, default=0)}")
        print(f"metric readable_images_lost={readable - consumed}")
        if errors == 0 or with_traceback < errors:
            sys.exit(f"{errors - with_traceback} of {errors} worker errors arrived without their traceback")
        print(f"{with_traceback} of {errors} worker errors re-raised with the worker's traceback, "
              f"workers alive after each: {min(workers_alive)}; {readable - consumed} readable images "
              "lost with their batches")


if __name__ == "__main__":
    main()
