"""An attendee's fix of 15 that is not ours: sampler.set_epoch(epoch) written in the loop.

Scenario 15, broken: without set_epoch, every epoch repeats epoch 0's order on every rank.

    python scenarios/15_distributed_sampler_set_epoch/broken.py   # exits 1: 3 later epochs repeat epoch 0
    python scenarios/15_distributed_sampler_set_epoch/fixed.py    # a new order every epoch

Distributed data parallel on CPU: the script starts 2 ranks (gloo on 127.0.0.1),
each reading its share of 101 samples through a DistributedSampler(shuffle=True)
and a DataLoader with 2 forked workers, for 4 epochs.  Each rank records the
indices in the order its loop received them; rank 0 gathers both ranks' orders.
broken.py: the loop never calls sampler.set_epoch, so the sampler shuffles with
seed + 0 every epoch: each rank gets the same samples in the same order every
epoch and never sees the other rank's half.  PyTorch says nothing; the script
counts the repeated epochs and exits 1.
fixed.py: the loop runs through epochs(loader, EPOCHS) from fixes/epoch_loop.py,
which calls set_epoch(epoch) on the sampler before each epoch: a new order every
epoch, and within an epoch the ranks still share only the padding sample (101
samples do not divide by 2 ranks, so the sampler repeats one).
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
        sampler.set_epoch(epoch)  # FIX: seed + epoch, a new order each epoch
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
