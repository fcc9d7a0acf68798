"""Scenario 03, measure: the list of dicts under fork and under forkserver (Python 3.14's default).

    python scenarios/03_list_refcount_growth/measure_forkserver.py

broken.py's dataset, read by two workers started by fork and then by
forkserver, and fixed.py's under forkserver; a tenth of broken.py's records,
so that the three loaders take seconds.  The fork server imports torch before
it forks a worker, as Python 3.14's does when it runs this script first (see
the top README).  Each worker's private memory (USS) is read after the first
batch and at the end of the epoch.  Expect, under fork: a small worker at the
first batch that grows as it reads (copy-on-read).  Under forkserver: the
dataset reaches each worker by pickle, so the worker holds its own full copy of
the list from the first batch, tens of MB more than fixed.py's worker, and
barely grows after: a growth check passes, yet the memory is spent from the
start.  fixed.py's packed records: small and flat under forkserver too.
"""
import multiprocessing

import psutil
from torch.utils.data import DataLoader

import broken
import fixed
from scenarios.instruments import process_memory_mb

RECORDS = broken.IMAGES // 10


def worker_uss_mb(batches):
    # Under forkserver the workers are children of the fork server, not of this process.
    return max(process_memory_mb(psutil.Process(worker.pid))[0] for worker in batches._workers)


def first_and_last_uss(dataset_class, context):
    loader = DataLoader(dataset_class(RECORDS), batch_size=256, num_workers=2,
                        multiprocessing_context=context)
    batches = iter(loader)
    for step, _ in enumerate(batches):
        if step == 0:
            first = worker_uss_mb(batches)
        if step == len(loader) - 1:  # the workers still run until the loop asks for more
            last = worker_uss_mb(batches)
    return first, last


def main():
    multiprocessing.set_forkserver_preload(["torch"])
    runs = {"fork_broken": (broken.DetectionDataset, "fork"),
            "forkserver_broken": (broken.DetectionDataset, "forkserver"),
            "forkserver_fixed": (fixed.DetectionDataset, "forkserver")}
    uss = {}
    for name, (dataset_class, context) in runs.items():
        first, last = uss[name] = first_and_last_uss(dataset_class, context)
        print(f"{name:18}: worker USS {first:6.1f} MB after the first batch, {last:6.1f} MB at the end "
              f"(growth {last - first:5.1f} MB)")
        print(f"metric {name}_first_mb={first:.1f}")
        print(f"metric {name}_growth_mb={last - first:.1f}")
    copy = uss["forkserver_broken"][0] - uss["forkserver_fixed"][0]
    print(f"metric forkserver_list_copy_mb={copy:.1f}")
    print(f"under forkserver each worker holds its own copy of the list from the first batch: "
          f"{copy:.0f} MB more than with packed records")


if __name__ == "__main__":
    main()
