"""Scenario 05, attempt (alt): the marks live in a multiprocessing Array from the loader's fork
context, seen through a NumPy view, and the Array's own lock guards the read-draw-write while the
slow read runs outside it.

Instead of a shared-memory tensor and a separate CONTEXT.Lock(), the dataset
allocates CONTEXT.Array("b", BAGS * INSTANCES) (shared memory that forked
workers map, not copy) and keeps `self.unused` as a NumPy view of it, so the
main process's final check reads the very marks the workers wrote.  The draw
(copy the bag's row, pick, mark, write back) runs under the Array's get_lock(),
so no two workers can pick from the same row before either has written its
marks; the READ_S read of the drawn tiles happens after the lock is released, so
the workers still read in parallel.  A real fix written differently from
fixed.py: one copy of the state, and its read-modify-write made atomic.
"""
import multiprocessing
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

BAGS, INSTANCES, DRAW = 4, 128, 4  # 4 slides of 128 tiles
VISITS = INSTANCES // DRAW  # visits per bag and epoch: each instance once
READ_S = 0.01  # reading one visit's tiles from storage
CONTEXT = multiprocessing.get_context("fork")


class BagDataset(Dataset):
    def __init__(self):
        self.features = torch.randn(BAGS, INSTANCES, 8, generator=torch.Generator().manual_seed(0))
        # FIX: one shared copy of the marks, with its own (process-shared) lock.
        self.shared = CONTEXT.Array("b", BAGS * INSTANCES)
        self.unused = np.frombuffer(self.shared.get_obj(), dtype=np.int8).reshape(BAGS, INSTANCES)
        self.unused[:] = 1

    def __len__(self):
        return BAGS * VISITS

    def draw_unused(self, bag):
        unused = torch.from_numpy(self.unused[bag].astype(np.float32))
        if unused.sum() < DRAW:  # bag exhausted: start a new round
            unused.fill_(1)
        picked = torch.multinomial(unused, DRAW)
        unused[picked] = 0
        self.unused[bag] = unused.numpy().astype(np.int8)
        return picked

    def __getitem__(self, index):
        bag = index // VISITS
        with self.shared.get_lock():  # the draw and its write-back: one worker at a time
            picked = self.draw_unused(bag)
        time.sleep(READ_S)  # read the drawn tiles: outside the lock, in parallel
        return bag, picked, self.features[bag, picked]


def main(dataset_class=BagDataset, **loader_options):
    dataset = dataset_class()
    loader = DataLoader(dataset, batch_size=None, num_workers=2,
                        multiprocessing_context=CONTEXT, **loader_options)
    started = time.perf_counter()
    drawn = [(bag, int(i)) for bag, picked, _ in loader for i in picked]
    print(f"metric epoch_s={time.perf_counter() - started:.2f}")
    distinct = set(drawn)
    repeats = len(drawn) - len(distinct)
    # What the main process's copy of the state says about the instances drawn.
    lost = sum(int(dataset.unused[bag, i]) for bag, i in distinct)
    print(f"metric draws={len(drawn)}")
    print(f"metric repeats={repeats}")
    print(f"metric lost_updates={lost}")
    print(f"{len(drawn)} draws, {repeats} repeated an instance; the main process's state "
          f"shows {len(distinct) - lost} of {len(distinct)} drawn instances as used")
    if repeats:
        sys.exit(f"{repeats} of {len(drawn)} draws repeated an instance within one epoch "
                 f"(the sampling rule allows 0); {lost} marks are missing from the main process's view")


if __name__ == "__main__":
    main()
