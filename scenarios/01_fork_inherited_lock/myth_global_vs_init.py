"""Scenario 01, myth check: does moving the data from a global into __init__
change what each forked worker gets?

    python scenarios/01_fork_inherited_lock/myth_global_vs_init.py

"Why does the training loop fail to initiate when using multiple DataLoader
workers?" says that data built in __init__ (its "Example 2: Correct
Initialization within the Dataset") gives each worker a dataset of its own,
unlike a module global (its "Example 1").  Both datasets below follow the
article's shape, and each worker reports what it sees.  Under fork, __init__
never runs in a worker: both versions hand every worker the parent's very
array, at the parent's address, on the parent's pages.  What changes the
picture is the start method: under spawn, the global version breaks and the
__init__ version gets a pickled copy.
"""
import gc
import os

import numpy as np
import psutil
from torch.utils.data import DataLoader, Dataset

ROWS = 500_000  # 38 MB of float64, large enough to see whether a worker copies it
INIT_PIDS = []  # every process in which an __init__ below ran
global_data = None


class SeenByWorker(Dataset):
    def __len__(self):
        return 4  # two samples per worker

    def __getitem__(self, index):
        row = self.rows()[index]  # what the article's __getitem__ reads
        rows = self.rows()
        return {"pid": os.getpid(), "address": rows.ctypes.data, "checksum": float(rows.sum()),
                "init_ran_here": os.getpid() in INIT_PIDS, "first": float(row[0]),
                "uss_mb": psutil.Process().memory_full_info().uss / 2**20}


class GlobalData(SeenByWorker):  # the article's Example 1
    def __init__(self, length):
        global global_data
        INIT_PIDS.append(os.getpid())
        if global_data is None:
            global_data = np.random.rand(length, 10)

    def rows(self):
        return global_data


class InitData(SeenByWorker):  # the article's Example 2
    def __init__(self, length):
        INIT_PIDS.append(os.getpid())
        # MYTH: built here, "each child process will create its own instance of the dataset".
        self.data = np.random.rand(length, 10)

    def rows(self):
        return self.data


def what_workers_see(dataset, context, workers):
    loader = DataLoader(dataset, batch_size=None, num_workers=workers, multiprocessing_context=context)
    try:
        return {seen["pid"]: seen for seen in loader}
    except Exception as err:  # reported, not hidden: this is the measurement
        lines = str(err).strip().splitlines()
        return f"{lines[0]} ... {lines[-1]}"
    finally:
        # The error's traceback holds the iterator in a reference cycle; collect it now,
        # or the next fork copies it and a worker runs its shutdown code.
        gc.collect()


def main():
    mb = ROWS * 10 * 8 / 2**20
    for dataset_class, name in ((GlobalData, "global"), (InitData, "init")):
        dataset = dataset_class(ROWS)
        parent = dataset.rows()
        workers = what_workers_see(dataset, "fork", workers=2)
        same = sum(w["address"] == parent.ctypes.data and w["checksum"] == parent.sum()
                   for w in workers.values())
        inits = sum(w["init_ran_here"] for w in workers.values())
        uss = max(w["uss_mb"] for w in workers.values())
        print(f"fork,  {dataset_class.__name__}: {same} of {len(workers)} workers read the parent's "
              f"array at its address {parent.ctypes.data:#x}; __init__ ran in {inits} workers; "
              f"worker USS at most {uss:.0f} MB for a {mb:.0f} MB array")
        print(f"metric fork_{name}_workers_reading_parent_array={same}")
        print(f"metric fork_{name}_inits_in_workers={inits}")
        print(f"metric fork_{name}_worker_uss_mb={uss:.1f}")
        # One spawned worker is enough to see what spawn delivers, at half the start-up cost.
        spawned = what_workers_see(dataset, "spawn", workers=1)
        if isinstance(spawned, str):
            print(f"spawn, {dataset_class.__name__}: the workers fail: {spawned}")
            print(f"metric spawn_{name}_workers_ok=0")
            continue
        copies = sum(w["checksum"] == parent.sum() and not w["init_ran_here"] for w in spawned.values())
        print(f"spawn, {dataset_class.__name__}: {copies} of {len(spawned)} workers hold an unpickled "
              f"copy with the parent's values; __init__ ran in none of them")
        print(f"metric spawn_{name}_workers_ok={copies}")
    print("under fork both versions give every worker the same array; "
          "where the data lives matters only under spawn")


if __name__ == "__main__":
    main()
