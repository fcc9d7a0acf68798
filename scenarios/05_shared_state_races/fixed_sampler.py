"""Scenario 05, fixed by design: the sampling state lives in a Sampler.

    python scenarios/05_shared_state_races/fixed_sampler.py

A Sampler runs in the main process and tells each worker which instances to
read, so no worker holds or writes any state: no copy to diverge, nothing to
lock.  Expect: 0 repeats, draws identical to a num_workers=0 run with the
same seed, and the price: the sampler draws a few visits ahead of the loop.
"""
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

from broken import BAGS, DRAW, INSTANCES, READ_S
from fixes.instance_draws import InstanceDrawSampler


class BagVisitDataset(Dataset):
    def __init__(self):
        self.features = torch.randn(BAGS, INSTANCES, 8, generator=torch.Generator().manual_seed(0))

    def __getitem__(self, visit):
        bag, picked = visit  # decided by the sampler, in the main process
        time.sleep(READ_S)
        picked = torch.tensor(picked)
        return bag, picked, self.features[bag, picked]


def epoch(num_workers):
    # FIX: the sampler draws and marks, in the main process only; the workers just read.
    sampler = InstanceDrawSampler(BAGS, INSTANCES, DRAW, seed=0)
    loader = DataLoader(BagVisitDataset(), sampler=sampler, batch_size=None,
                        num_workers=num_workers,
                        multiprocessing_context="fork" if num_workers else None)
    drawn, lead = [], 0
    for step, (bag, picked, _) in enumerate(loader):
        lead = max(lead, sampler.visits_drawn - (step + 1))
        drawn += [(bag, int(i)) for i in picked]
    return drawn, lead, sampler


def main():
    started = time.perf_counter()
    drawn, lead, sampler = epoch(num_workers=2)
    print(f"metric epoch_s={time.perf_counter() - started:.2f}")
    repeats = len(drawn) - len(set(drawn))
    lost = sum(int(sampler.unused[bag, i]) for bag, i in set(drawn))
    same = drawn == epoch(num_workers=0)[0]
    for name, value in [("draws", len(drawn)), ("repeats", repeats), ("lost_updates", lost),
                        ("sampler_lead_visits", lead), ("same_as_num_workers_0", int(same))]:
        print(f"metric {name}={value}")
    print(f"{len(drawn)} draws, {repeats} repeated an instance; identical to num_workers=0: {same}; "
          f"the sampler ran up to {lead} visits ahead of the loop")
    if repeats or not same:
        sys.exit(f"{repeats} repeats, identical to num_workers=0: {same} (expected 0 and True)")


if __name__ == "__main__":
    main()
