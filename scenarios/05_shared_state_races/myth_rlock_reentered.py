"""Scenario 05, myth check: the re-entrant code of myth_lock_reentered.py with an RLock.

    python scenarios/05_shared_state_races/myth_rlock_reentered.py

An RLock counts how often its owner has acquired it, so the nested `with`
in refill_if_exhausted() goes through.  Expect: completes, 0 repeats.  An
RLock is the answer to re-entrant code, not to locking as such.
"""
from fixed import CONTEXT, main
from myth_lock_reentered import ReenteringBagDataset


class RLockBagDataset(ReenteringBagDataset):
    make_lock = CONTEXT.RLock  # MYTH: "use an RLock": needed here only because the code re-enters


if __name__ == "__main__":
    main(RLockBagDataset)
