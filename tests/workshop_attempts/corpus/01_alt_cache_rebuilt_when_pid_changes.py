"""Scenario 01, attempt (alt): the dataset remembers which process built its label cache and builds
a new one, lock and refresher thread included, the first time it is used in any other process.

Instead of fixes/per_worker.py, the dataset does the bookkeeping itself: a
`labels` property compares os.getpid() with the pid that owns the cache it
holds, and in a forked worker (a different pid) it drops the inherited cache
without touching its lock and builds a LabelCache of its own, waiting for that
cache's first refresh to start so the first lookup blocks on a lock that a live
thread of this process will release.  __getstate__ leaves the cache out, so the
dataset also pickles for spawn/forkserver workers, which build theirs the same
way.  This is a real fix: no worker ever acquires a lock copied by fork, wherever
the parent's refresher happens to be when the loader forks.
"""
import faulthandler
import os
import threading
import time

import torch
from torch.utils.data import DataLoader, Dataset

CLASSES = 10
FETCH_S = 2.0  # how long the label service takes to answer


class LabelCache:  # class names from a label service, kept fresh by a background thread
    def __init__(self):
        self.lock = threading.Lock()
        self.names = {}
        self.refreshing = threading.Event()
        threading.Thread(target=self._refresh_forever, daemon=True).start()

    def _refresh_forever(self):
        while True:
            with self.lock:
                self.refreshing.set()
                time.sleep(FETCH_S)  # stands in for the HTTP request
                self.names = {label: f"class_{label}" for label in range(CLASSES)}
            time.sleep(300)

    def __getitem__(self, label):
        with self.lock:
            return self.names[label]


class TaggedImages(Dataset):
    def __init__(self, labels):
        self._labels = labels
        self._labels_pid = os.getpid()  # the process whose threads own this cache's lock

    @property
    def labels(self):
        if self._labels_pid != os.getpid():  # a forked (or unpickled) copy: not our cache
            cache = LabelCache()  # our own lock and our own refresher thread
            cache.refreshing.wait()  # its first refresh holds the lock: lookups wait for the names
            self._labels, self._labels_pid = cache, os.getpid()
        return self._labels

    def __getstate__(self):  # spawn/forkserver: send no cache (and no lock) to the worker
        return {"_labels": None, "_labels_pid": None}

    def __len__(self):
        return 256

    def __getitem__(self, index):
        return torch.full((3, 32, 32), float(index)), self.labels[index % CLASSES]


def arm_watchdog(worker_id):
    # The demo must not outlive itself; staggered, so that two stacks never interleave.
    faulthandler.dump_traceback_later(30 + 10 * worker_id, exit=True)


def main(timeout=0, context="fork"):
    labels = LabelCache()
    labels.refreshing.wait()  # fork during a refresh on every run, not one run in ten
    # The dataset still gets the parent's cache, but uses it only in the process that built it.
    dataset = TaggedImages(labels)
    loader = DataLoader(dataset, batch_size=32, num_workers=2, timeout=timeout,
                        worker_init_fn=arm_watchdog, multiprocessing_context=context)
    print("training: waiting for the first batch", flush=True)
    started = time.perf_counter()
    for step, (images, names) in enumerate(loader):
        if step == 0:
            first_batch_s = time.perf_counter() - started
            print(f"metric first_batch_s={first_batch_s:.2f}")
        print(f"step {step}: {len(names)} images, first is a {names[0]}")
    print(f"metric batches={step + 1}")
    print(f"epoch done; the main process still reads its own cache: {labels[3]}")
    return first_batch_s


if __name__ == "__main__":
    main()
