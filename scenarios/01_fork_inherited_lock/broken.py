"""Scenario 01, broken: the training loop never starts.

    python scenarios/01_fork_inherited_lock/broken.py

Expect: "waiting for the first batch", then nothing: no batch, no error, no
CPU use.  A background thread of the main process holds the label cache's
lock while it refreshes; DataLoader forks its workers at that moment, and in
each worker the lock stays locked forever, because the thread that would
release it was not copied.  After 30 s worker 0's watchdog prints where it
waits and exits, and only then does the DataLoader raise an error.
"""
import faulthandler
import threading
import time

import torch
from torch.utils.data import DataLoader, Dataset

CLASSES = 10
FETCH_S = 2.0  # how long the label service takes to answer
WATCHDOG_S = 30


class LabelCache:
    """Class names from a label service, kept fresh by a background thread."""

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
        # BUG: the parent's cache, its locked lock included, is copied into every forked worker.
        self.labels = labels

    def __len__(self):
        return 256

    def __getitem__(self, index):
        label = index % CLASSES
        return torch.full((3, 32, 32), float(index)), self.labels[label]


def arm_watchdog(worker_id):
    # Ends a stuck worker, printing where it waits; the demo must not outlive itself.
    # Staggered by worker: two stacks written into one stderr at once interleave into garbage.
    faulthandler.dump_traceback_later(WATCHDOG_S + 10 * worker_id, exit=True)


def main(timeout=0, context="fork"):
    labels = LabelCache()
    labels.refreshing.wait()  # fork during a refresh on every run, not one run in ten
    loader = DataLoader(TaggedImages(labels), batch_size=32, num_workers=2, timeout=timeout,
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
