"""Builds a new DistributedSampler, and its DataLoader, at the start of every epoch, seeded with
the epoch number: both ranks draw the same new permutation each epoch (seed + 0 with seed=epoch,
what set_epoch(epoch) gives with seed=0), so the order changes every epoch and the ranks' slices
of it still do not overlap. A fix, written without set_epoch.
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
    orders = []
    for epoch in range(EPOCHS):
        # Same seed on every rank (the slices stay disjoint), a new seed every epoch.
        sampler = DistributedSampler(dataset, num_replicas=WORLD_SIZE, rank=rank, shuffle=True, seed=epoch)
        loader = DataLoader(dataset, sampler=sampler, batch_size=8, num_workers=2,
                            multiprocessing_context="fork")
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
