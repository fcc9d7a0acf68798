"""Scenario 01, attempt (shortcut): the cache moves off the dataset into a module-level global, and
the loop waits until the refresh has let go of the lock.

The dataset no longer carries the LabelCache: __getitem__ reads a module-level
global LABELS instead, so nothing about the dataset object holds a lock any
more.  But a forked worker still inherits that global, and with it the very
same threading.Lock in whatever state the refresher thread left it: the
workers reach the fork-copied lock through the module instead of through
self.labels.  The hang goes away in this run only because main() now polls
LABELS.lock.locked() until the refresher has released it, so the fork happens
to land in the 300 s pause between two refreshes.  A refresh that starts while
the loader forks (a second epoch, a shorter refresh interval, a slow machine)
hangs the workers exactly as before.  This is a shortcut, not a fix: the
workers still share the parent's lock instead of building their own.
"""
import faulthandler
import threading
import time

import torch
from torch.utils.data import DataLoader, Dataset

CLASSES = 10
FETCH_S = 2.0  # how long the label service takes to answer

LABELS = None  # the process's label cache, set up by main()


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
    def __init__(self):
        pass  # carries no cache any more: the label comes from the module's LABELS

    def __len__(self):
        return 256

    def __getitem__(self, index):
        return torch.full((3, 32, 32), float(index)), LABELS[index % CLASSES]


def arm_watchdog(worker_id):
    # The demo must not outlive itself; staggered, so that two stacks never interleave.
    faulthandler.dump_traceback_later(30 + 10 * worker_id, exit=True)


def main(timeout=0, context="fork"):
    global LABELS
    labels = LABELS = LabelCache()
    labels.refreshing.wait()  # fork during a refresh on every run, not one run in ten
    while labels.lock.locked():  # let the refresh finish before the workers fork
        time.sleep(0.05)
    dataset = TaggedImages()
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
