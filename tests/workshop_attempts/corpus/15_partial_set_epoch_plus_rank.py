"""Calls set_epoch before each epoch, but with epoch * WORLD_SIZE + rank, "so that each rank gets
its own shuffle": every epoch now has a new order, but the two ranks no longer draw the same
permutation, so their slices of it overlap: within an epoch they share about 30 samples and
leave about 30 unseen. The repeat is fixed, the split between ranks is broken: half a fix.
"""
import sys

import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler

from _two_ranks import WORLD_SIZE, report, run_two_ranks

SAMPLES, EPOCHS = 101, 4


class NumberedSamples(Dataset):
    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        return {"index": index, "x": torch.full((4,), float(index))}


def train(rank):
    """One rank's loop; returns, for each epoch, the indices in the order the loop got them."""
    dataset = NumberedSamples()
    sampler = DistributedSampler(dataset, num_replicas=WORLD_SIZE, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(dataset, sampler=sampler, batch_size=8, num_workers=2,
                        multiprocessing_context="fork")
    orders = []
    for epoch in range(EPOCHS):
        sampler.set_epoch(epoch * WORLD_SIZE + rank)  # a different shuffle on each rank, each epoch
        order = []
        for batch in loader:
            order += batch["index"].tolist()  # a real loop trains on batch["x"] here
        orders.append(order)
    return orders


def main():
    orders = run_two_ranks(train)  # orders[rank][epoch], gathered to rank 0 over gloo
    figures = report(orders, SAMPLES)
    for name, value in figures.items():
        print(f"metric {name}={value}")
    if figures["repeated_epochs"] == EPOCHS - 1:
        sys.exit(f"all {EPOCHS - 1} epochs after epoch 0 repeated its order on every rank: "
                 f"each rank saw only {figures['min_samples_seen_by_a_rank']} of {SAMPLES} samples, "
                 "the sampler's epoch was never set")
    print(f"{figures['distinct_orders_per_rank']} different orders in {EPOCHS} epochs on each rank; "
          f"within an epoch the ranks shared {figures['shared_beyond_padding']} samples beyond "
          f"{figures['padding_duplicates_per_epoch']} padding duplicate")


if __name__ == "__main__":
    main()
