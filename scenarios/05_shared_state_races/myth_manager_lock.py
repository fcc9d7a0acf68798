"""Scenario 05, myth check: Manager().Lock(), acquired once per item, does not deadlock.

    python scenarios/05_shared_state_races/myth_manager_lock.py

"Communicating with Dataloader workers" warns that
torch.multiprocessing.Manager().Lock() deadlocks.  Used the way fixed.py uses
its lock (acquired once per item), it does not.  Its cost is elsewhere: every
acquire and release is a request to the manager's server process.  Expect:
completes, 0 repeats, and the time of one acquire/release pair for the
Manager lock next to the context's own Lock: tens of times slower.
"""
import time

import torch.multiprocessing

from fixed import CONTEXT, BagDataset, main


class ManagerLockBagDataset(BagDataset):
    def __init__(self):
        super().__init__()
        # MYTH: "a Manager().Lock() deadlocks the workers": not when taken once per item.
        self.lock = torch.multiprocessing.Manager().Lock()


def microseconds_per_use(lock, times):
    started = time.perf_counter()
    for _ in range(times):
        with lock:
            pass
    return (time.perf_counter() - started) / times * 1e6


if __name__ == "__main__":
    main(ManagerLockBagDataset)
    manager = torch.multiprocessing.Manager()
    manager_us = microseconds_per_use(manager.Lock(), times=2_000)
    context_us = microseconds_per_use(CONTEXT.Lock(), times=200_000)
    manager.shutdown()
    print(f"metric manager_lock_us={manager_us:.1f}")
    print(f"metric context_lock_us={context_us:.2f}")
    print(f"metric manager_lock_slowdown={manager_us / context_us:.0f}")
    print(f"one acquire/release: {manager_us:.1f} µs with the Manager lock, "
          f"{context_us:.2f} µs with the context's Lock")
