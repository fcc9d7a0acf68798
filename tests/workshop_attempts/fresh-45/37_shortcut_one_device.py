"""ATTEMPT 37 shortcut: devices=1: with one rank nothing wraps the sampler, and every batch is balanced again.

Scenario 37, broken: Lightning wraps the user's class-balancing sampler under DDP and shuffles its batches apart.

    python scenarios/37_framework_replaces_sampler/broken.py   # exits 1: most batches are no longer half rare
    python scenarios/37_framework_replaces_sampler/fixed.py    # every batch 4 rare + 4 common, on both ranks

A Lightning Trainer on CPU with strategy="ddp", devices=2 (Lightning starts the second rank
itself by running this script again; gloo on 127.0.0.1), one epoch over 128 samples of which 16
are of the rare class, read by a DataLoader with 2 workers in batches of 8.  The user's sampler,
BalancedBatches, lays its indices out so that every run of 8 holds 4 rare samples (drawn again
and again) and 4 common ones: in one process every batch is exactly half rare.  Each rank
counts the rare samples in the batches its training_step receives; rank 0 gathers the counts.
broken.py: the Trainer's default use_distributed_sampler=True wraps the sampler in Lightning's
DistributedSamplerWrapper with shuffle=True, which permutes the sampler's whole list before it
deals it to the ranks: the rare share over the epoch stays 50%, but only 10 of the 28
batches keep 4 rare samples, the others hold 2 to 6.  Nothing warns; the script exits 1.
fixed.py: use_distributed_sampler=False, and the sampler deals whole batches to the ranks
itself (batch i to rank i % world): 14 batches per rank, each exactly 4 rare + 4 common.
"""
import sys

import lightning as L
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, Sampler

SAMPLES, RARE, BATCH, RANKS = 128, 16, 8, 2


class Scans(Dataset):
    """Samples 0..15 are the rare class (label 1), the other 112 the common one."""

    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        return torch.full((4,), float(index)), torch.tensor(int(index < RARE))


class BalancedBatches(Sampler):
    """Every run of `batch` indices: half drawn from the rare class, half from the common one."""

    def __init__(self, labels, batch, seed=0):
        self.rare = [i for i, label in enumerate(labels) if label == 1]
        self.common = [i for i, label in enumerate(labels) if label == 0]
        self.half, self.seed, self.epoch = batch // 2, seed, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        return 2 * len(self.common)

    def __iter__(self):
        draw = torch.Generator().manual_seed(self.seed + self.epoch)
        common = [self.common[i] for i in torch.randperm(len(self.common), generator=draw)]
        rare = [self.rare[i] for i in torch.randint(len(self.rare), (len(common),), generator=draw)]
        for start in range(0, len(common), self.half):
            yield from rare[start:start + self.half]
            yield from common[start:start + self.half]


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 2)
        self.rare_per_batch = []

    def training_step(self, batch, _):
        x, y = batch
        self.rare_per_batch.append(int(y.sum()))
        return torch.nn.functional.cross_entropy(self.layer(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)

    def train_dataloader(self):
        dataset = Scans()
        sampler = BalancedBatches([int(i < RARE) for i in range(SAMPLES)], BATCH)
        return DataLoader(dataset, sampler=sampler, batch_size=BATCH, num_workers=2)


def report(per_rank):
    """Rank 0: the batches of each rank against the 4 + 4 the sampler lays out in one process."""
    half = BATCH // 2
    for rank, counts in enumerate(per_rank):
        print(f"rank {rank}: rare samples per batch {counts}")
        print(f"metric batches_rank{rank}={len(counts)}\nmetric balanced_batches_rank{rank}="
              f"{sum(c == half for c in counts)}")
    counts = [c for rank_counts in per_rank for c in rank_counts]
    balanced = sum(c == half for c in counts)
    alone = list(BalancedBatches([int(i < RARE) for i in range(SAMPLES)], BATCH))  # one process, no Trainer
    alone = [sum(i < RARE for i in alone[s:s + BATCH]) for s in range(0, len(alone), BATCH)]
    print(f"metric sampler_alone_balanced_batches={sum(c == half for c in alone)}")
    print(f"metric batches={len(counts)}\nmetric balanced_batches={balanced}\nmetric rare_share_pct="
          f"{round(100 * sum(counts) / (BATCH * len(counts)))}\nmetric fewest_rare={min(counts)}\n"
          f"metric most_rare={max(counts)}")
    if balanced < len(counts):
        sys.exit(f"the sampler's balance was lost: {balanced} of {len(counts)} batches hold {half} rare + "
                 f"{half} common; the others hold {min(counts)} to {max(counts)} rare samples of {BATCH}")
    print(f"every batch on the {len(per_rank)} ranks holds {half} rare + {half} common: "
          f"{len(counts)} of {len(counts)}, as the sampler lays them out")


def main():
    model = Classifier()
    # BUG: use_distributed_sampler defaults to True: under DDP the sampler is wrapped and its list shuffled
    trainer = L.Trainer(accelerator="cpu", devices=1, strategy="ddp", max_epochs=1,
                        logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(model)
    per_rank = [None] * trainer.world_size
    dist.all_gather_object(per_rank, model.rare_per_batch)
    if trainer.global_rank == 0:
        report(per_rank)


if __name__ == "__main__":
    main()
