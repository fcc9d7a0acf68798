"""Scenario 05, myth check: the seed's own construct, Manager().Lock(), once per item.

    python scenarios/05_shared_state_races/myth_manager_lock.py

Seed 003 warns that torch.multiprocessing.Manager().Lock() deadlocks.  Used
the way fixed.py uses its lock (acquired once per item), it does not.  Its
cost is elsewhere: every acquire and release is a request to the manager's
server process.  Expect: completes, 0 repeats, and the time of one
acquire/release pair for the Manager lock next to the context's own Lock.
"""
import time

import torch.multiprocessing

from fixed import CONTEXT, BagDataset, main


class ManagerLockBagDataset(BagDataset):
    def __init__(self):
        super().__init__()
        self.lock = torch.multiprocessing.Manager().Lock()


def microseconds_per_use(lock, times=2000):
    started = time.perf_counter()
    for _ in range(times):
        with lock:
            pass
    return (time.perf_counter() - started) / times * 1e6


if __name__ == "__main__":
    main(ManagerLockBagDataset)
    manager = torch.multiprocessing.Manager()
    print(f"metric manager_lock_us={microseconds_per_use(manager.Lock()):.1f}")
    print(f"metric context_lock_us={microseconds_per_use(CONTEXT.Lock()):.2f}")
    manager.shutdown()
