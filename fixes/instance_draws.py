"""InstanceDrawSampler: draw instances from bags without repeats, with the
drawing state kept in the main process.  Fixes scenario 05 (shared state
between DataLoader workers: divergence and races).

Multiple-instance learning often visits a bag (a slide, a video, a document)
several times per epoch and wants each visit to read instances the earlier
visits did not: "without replacement until the bag is exhausted".  Kept on
the Dataset, that state is copied into every forked worker (each one draws
from its own copy) or, once shared, raced on.  A Sampler runs in the main
process only, so here the state has one owner and needs no lock: each index
it yields is `(bag, (instance, ...))`, and the Dataset just reads those.

    sampler = InstanceDrawSampler(bags=32, instances=16, draw=4, seed=0)
    loader = DataLoader(dataset, sampler=sampler, batch_size=None, num_workers=2)
    # dataset[(bag, instances)] loads and returns those instances of that bag

What it costs: the DataLoader asks its sampler for indices ahead of the loop
(`num_workers * prefetch_factor` of them at the start), so `visits_drawn`
runs that far ahead of what the training loop has consumed; a rule that
changes the probabilities from the loss sees its update that many visits late.
"""
from __future__ import annotations

from collections.abc import Iterator

import torch
from torch.utils.data import Sampler


class InstanceDrawSampler(Sampler):
    """Yields `(bag, instances)` for `visits` visits of each of `bags` bags per
    epoch; within a bag no instance repeats until all of them have been drawn.

    The state persists across epochs (an epoch that ends mid-round continues
    the round in the next one); `seed` makes the sequence reproducible, and
    the same whatever `num_workers` the DataLoader uses.
    """

    def __init__(self, bags: int, instances: int, draw: int, visits: int | None = None,
                 shuffle: bool = False, seed: int = 0):
        if bags < 1 or instances < 1:
            raise ValueError(f"need at least one bag and one instance per bag (got bags={bags}, "
                             f"instances={instances})")
        if not 1 <= draw <= instances:
            raise ValueError(f"cannot draw {draw} instances per visit from bags of {instances}; "
                             f"choose draw between 1 and {instances}")
        self.bags, self.instances, self.draw = bags, instances, draw
        self.visits = instances // draw if visits is None else visits
        if self.visits < 1:
            raise ValueError(f"visits must be at least 1 (got {visits}); leave it out to visit each "
                             f"bag instances // draw = {instances // draw} times per epoch")
        self.shuffle = shuffle
        self.generator = torch.Generator().manual_seed(seed)
        self.unused = torch.ones(bags, instances)
        self.visits_drawn = 0

    def __len__(self) -> int:
        return self.bags * self.visits

    def __iter__(self) -> Iterator[tuple[int, tuple[int, ...]]]:
        order = torch.arange(self.bags).repeat_interleave(self.visits)
        if self.shuffle:
            order = order[torch.randperm(len(order), generator=self.generator)]
        for bag in order.tolist():
            yield bag, self.draw_from(bag)

    def draw_from(self, bag: int) -> tuple[int, ...]:
        """Draw `draw` unused instances of `bag` and mark them used."""
        unused = self.unused[bag]
        if unused.sum() < self.draw:  # the bag is exhausted: a new round begins
            unused.fill_(1)
        picked = torch.multinomial(unused, self.draw, generator=self.generator)
        unused[picked] = 0
        self.visits_drawn += 1
        # Plain ints: a tensor in an index would travel to the worker through shared memory.
        return tuple(picked.tolist())
