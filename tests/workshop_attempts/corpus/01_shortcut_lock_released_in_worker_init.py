"""Takes the cache's lock in the training process while the loader forks (so no refresh is half
done at the fork), and releases each worker's copy of it in worker_init_fn. The workers still get
the parent's cache, without its refresh thread: their class names are frozen at the fork, and a
lock they never took is forced open from outside the dataset. A shortcut.
"""
import faulthandler
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
        self.labels = labels

    def __len__(self):
        return 256

    def __getitem__(self, index):
        return torch.full((3, 32, 32), float(index)), self.labels[index % CLASSES]


def arm_watchdog(worker_id):
    # The demo must not outlive itself; staggered, so that two stacks never interleave.
    faulthandler.dump_traceback_later(30 + 10 * worker_id, exit=True)
    # The training process held the lock at the fork (see main): nobody here will release it.
    lock = torch.utils.data.get_worker_info().dataset.labels.lock
    if lock.locked():
        lock.release()


def main(timeout=0, context="fork"):
    labels = LabelCache()
    labels.refreshing.wait()  # fork during a refresh on every run, not one run in ten
    # BUG: the dataset carries the parent's cache, its lock held mid-refresh, into every forked worker.
    dataset = TaggedImages(labels)
    loader = DataLoader(dataset, batch_size=32, num_workers=2, timeout=timeout,
                        worker_init_fn=arm_watchdog, multiprocessing_context=context)
    print("training: waiting for the first batch", flush=True)
    started = time.perf_counter()
    with labels.lock:  # waits out the refresh; the fork happens while we hold it, not the refresher
        batches = iter(loader)
    for step, (images, names) in enumerate(batches):
        if step == 0:
            first_batch_s = time.perf_counter() - started
            print(f"metric first_batch_s={first_batch_s:.2f}")
        print(f"step {step}: {len(names)} images, first is a {names[0]}")
    print(f"metric batches={step + 1}")
    print(f"epoch done; the main process still reads its own cache: {labels[3]}")
    return first_batch_s


if __name__ == "__main__":
    main()
