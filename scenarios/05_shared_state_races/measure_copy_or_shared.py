"""Scenario 05, diagnosis: does a worker hold a copy of the state, or the shared state?

    python scenarios/05_shared_state_races/measure_copy_or_shared.py

Two checks, run on broken.py's dataset and on fixed.py's, with two forked
workers.  Comparing id(get_worker_info().dataset) with id(dataset) in the main
process cannot tell them apart: fork copies memory to the same addresses, so
the ids are equal in both.  A value written in a worker can: each worker writes
its pid into the state, and the main process reads it back only where the
state is shared (tensor.is_shared() agrees).  Expect: equal ids for both;
0 of 2 writes seen for broken.py, 2 of 2 for fixed.py.
"""
import os

from torch.utils.data import DataLoader, get_worker_info

import broken
import fixed


class Probe:
    """Mixed into a dataset class: each item is one look from inside a worker."""

    def __getitem__(self, index):
        self.unused[0, index] = os.getpid()  # written here, read back in the main process
        return os.getpid(), id(get_worker_info().dataset), self.unused.is_shared()


class BrokenProbe(Probe, broken.BagDataset):
    pass


class FixedProbe(Probe, fixed.BagDataset):
    pass


def look(name, dataset_class):
    dataset = dataset_class()
    loader = DataLoader(dataset, sampler=range(2), batch_size=None, num_workers=2,
                        multiprocessing_context=fixed.CONTEXT)
    seen = list(loader)  # one item per worker
    ids_equal = all(worker_id == id(dataset) for _, worker_id, _ in seen)
    shared = all(is_shared for _, _, is_shared in seen)
    writes_seen = sum(int(dataset.unused[0, index]) == pid for index, (pid, _, _) in enumerate(seen))
    print(f"metric {name}_ids_equal={int(ids_equal)}")
    print(f"metric {name}_is_shared={int(shared)}")
    print(f"metric {name}_writes_seen={writes_seen}")
    print(f"{name}.py: id(dataset) in the workers equals the main process's: {ids_equal}; "
          f"unused.is_shared(): {shared}; worker writes seen by the main process: "
          f"{writes_seen} of {len(seen)}")


def main():
    look("broken", BrokenProbe)
    look("fixed", FixedProbe)


if __name__ == "__main__":
    main()
