"""Scenario 05, myth check: "a plain Lock deadlocks, you need an RLock".

    python scenarios/05_shared_state_races/myth_lock_reentered.py

fixed.py takes a plain Lock once per item and never deadlocks.  A plain Lock
deadlocks when a process that holds it asks for it again: here
refill_if_exhausted() locks (it is also meant to be called on its own) and
draw_unused() calls it with the lock already held.  Expect: each worker blocks
on its first item, for ever; a watchdog prints the worker's stack after
STUCK_S seconds and ends it, and the DataLoader reports the dead worker.
myth_rlock_reentered.py runs the same code with an RLock and completes.
"""
import faulthandler
import signal

from fixed import CONTEXT, DRAW, BagDataset, main

STUCK_S = 5


class ReenteringBagDataset(BagDataset):
    make_lock = CONTEXT.Lock

    def __init__(self):
        super().__init__()
        self.lock = self.make_lock()

    def refill_if_exhausted(self, bag):
        with self.lock:
            if self.unused[bag].sum() < DRAW:
                self.unused[bag] = 1

    def draw_unused(self, bag):
        # MYTH: a plain Lock deadlocks only here, where its holder asks for it again.
        self.refill_if_exhausted(bag)
        return super().draw_unused(bag)


def show_stack_when_stuck(worker_id):
    # Watchdog, not part of the lesson.  Worker 0 prints its stack after STUCK_S and exits; the
    # main process then ends the others, which print theirs as they go.  One at a time: two
    # dumps written at once into the same stderr interleave into garbage.
    faulthandler.dump_traceback_later(STUCK_S + 10 * worker_id, exit=True)
    faulthandler.register(signal.SIGTERM, chain=True)


if __name__ == "__main__":
    main(ReenteringBagDataset, worker_init_fn=show_stack_when_stuck)
