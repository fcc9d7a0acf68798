"""Scenario 37, measured: what Lightning's Trainer, Fabric and Accelerate each put around a custom sampler under DDP.

    python scenarios/37_framework_replaces_sampler/measure_library_wrappers.py

The libraries' own functions, called as each calls them for rank 0 and rank 1 of 2, in one process
(no process group: each takes the rank as an argument), on broken.py's BalancedBatches (every run
of 8 indices: 4 rare + 4 common) over its 128 samples (16 rare), batches of 8:
  trainer        lightning's _get_distributed_sampler(shuffle=True), as the Trainer calls it for a
                 training loader: DistributedSamplerWrapper, the sampler's list permuted
  fabric         Fabric's _get_distributed_sampler (setup_dataloaders): the same wrapper, shuffle=False,
                 since the sampler is no RandomSampler: every second index, in the sampler's order
  trainer_random_subclass  the same sampler written as a RandomSampler subclass: the Trainer puts a
                 plain DistributedSampler over the dataset in its place, and its __iter__ never runs
  accelerate     prepare_data_loader: BatchSamplerShard deals the sampler's whole batches in turn
  accelerate_split_batches  prepare_data_loader(split_batches=True): each batch of 8 cut in two, the
                 first 4 (the rare ones) to rank 0, the last 4 to rank 1
For each: the batches (of 8, or 4 per rank with split_batches) that keep the sampler's balance, half
rare, and the rare share over the epoch.
"""
from accelerate.data_loader import prepare_data_loader
from lightning.fabric import Fabric
from lightning.pytorch.trainer.connectors.data_connector import _get_distributed_sampler
from torch.utils.data import DataLoader, RandomSampler

from broken import BATCH, RARE, SAMPLES, BalancedBatches, Scans

LABELS = [int(i < RARE) for i in range(SAMPLES)]


class BalancedRandom(RandomSampler):
    """BalancedBatches as some users write it: a RandomSampler subclass with its own __iter__."""

    def __init__(self, dataset):
        super().__init__(dataset)
        self.balanced = BalancedBatches(LABELS, BATCH)

    def __len__(self):
        return len(self.balanced)

    def __iter__(self):
        return iter(self.balanced)


def rare_per_batch(indices, size):
    return [sum(i < RARE for i in indices[s:s + size]) for s in range(0, len(indices), size)]


def wrapped(make, rank, sampler=None):
    """The rare count of each batch of 8 a rank gets from the sampler the library puts in."""
    loader = DataLoader(Scans(), sampler=sampler or BalancedBatches(LABELS, BATCH), batch_size=BATCH)
    return rare_per_batch(list(make(loader, rank)), BATCH)


def accelerate(rank, split_batches):
    loader = DataLoader(Scans(), sampler=BalancedBatches(LABELS, BATCH), batch_size=BATCH)
    shard = prepare_data_loader(loader, num_processes=2, process_index=rank, split_batches=split_batches,
                                put_on_device=False)
    return [int(labels.sum()) for _, labels in shard]


def main():
    ways = {
        "trainer": lambda r: wrapped(lambda loader, rank: _get_distributed_sampler(
            loader, shuffle=True, overfit_batches=0, num_replicas=2, rank=rank), r),
        "fabric": lambda r: wrapped(lambda loader, rank: Fabric._get_distributed_sampler(
            loader, num_replicas=2, rank=rank), r),
        "trainer_random_subclass": lambda r: wrapped(lambda loader, rank: _get_distributed_sampler(
            loader, shuffle=True, overfit_batches=0, num_replicas=2, rank=rank), r, BalancedRandom(Scans())),
        "accelerate": lambda r: accelerate(r, False),
        "accelerate_split_batches": lambda r: accelerate(r, True),
    }
    alone = rare_per_batch(list(BalancedBatches(LABELS, BATCH)), BATCH)
    print(f"metric alone_balanced_batches={sum(c == BATCH // 2 for c in alone)}")
    for name, way in ways.items():
        per_rank = [way(rank) for rank in (0, 1)]
        size = BATCH // 2 if name == "accelerate_split_batches" else BATCH
        counts = per_rank[0] + per_rank[1]
        balanced = sum(c == size // 2 for c in counts)
        share = round(100 * sum(counts) / (size * len(counts)))
        print(f"{name}: rank 0 {per_rank[0]}\n{' ' * len(name)}  rank 1 {per_rank[1]}")
        print(f"metric {name}_balanced_batches={balanced}\nmetric {name}_batches={len(counts)}\n"
              f"metric {name}_rare_share_pct={share}")
    print("the sampler's balance kept by: fabric and accelerate (whole batches); lost by the trainer's shuffled "
          "wrapper, by its replacement of a RandomSampler subclass, and per rank by accelerate's split_batches")


if __name__ == "__main__":
    main()
