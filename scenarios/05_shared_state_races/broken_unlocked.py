"""Scenario 05, broken the second way: the state is shared, but not locked.

    python scenarios/05_shared_state_races/broken_unlocked.py

The usual first repair of broken.py: move the marks into shared memory.  Now
the workers' writes do reach one tensor (and the main process sees them), but
two workers that visit the same bag at once both read its row, both draw from
it, and the later write-back erases the earlier one's marks.  Expect: repeats
and lost updates, counted, and a failed check; no deadlock.
"""
from broken import BagDataset, main


class SharedStateBagDataset(BagDataset):
    def __init__(self):
        super().__init__()
        # BUG: shared, so every worker writes the same tensor, but nothing orders
        # one worker's read-draw-write against another's.
        self.unused.share_memory_()


if __name__ == "__main__":
    main(SharedStateBagDataset)
