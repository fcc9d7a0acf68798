"""Lightning defect detector trained with DDP on 2 CPU processes, with class-balanced batches.

Defects are rare (1 sample in 8), so every batch of 8 is built as 4 defects (drawn again and again)
and 4 good parts. The sampler is written as a DistributedSampler: each epoch it lays out the
balanced batches from seed + epoch, the same on every rank, and deals whole batches to the ranks
(batch i to rank i % world), so Lightning uses it as it is. Each rank reports the defects per batch.
"""
import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, DistributedSampler

N, BATCH, EPOCHS = 256, 8, 2


class Parts(Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(0)
        self.labels = (torch.rand(N, generator=g) < 0.125).long()
        self.x = torch.randn(N, 16, generator=g) + self.labels[:, None]

    def __len__(self):
        return N

    def __getitem__(self, i):
        return self.x[i], self.labels[i]


class DistributedBalancedSampler(DistributedSampler):
    def __init__(self, dataset, labels, batch_size, **kw):
        super().__init__(dataset, shuffle=True, **kw)
        self.labels, self.batch_size = labels, batch_size
        self.common = (labels == 0).nonzero().flatten()
        self.rare = (labels == 1).nonzero().flatten()
        half = batch_size // 2
        self.batches_total = len(self.common) // half // self.num_replicas * self.num_replicas
        self.num_samples = self.batches_total // self.num_replicas * batch_size
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self):
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        half = self.batch_size // 2
        common = self.common[torch.randperm(len(self.common), generator=g)]
        rare = self.rare[torch.randint(len(self.rare), (self.batches_total * half,), generator=g)]
        out = []
        for b in range(self.rank, self.batches_total, self.num_replicas):
            out += common[b * half:(b + 1) * half].tolist() + rare[b * half:(b + 1) * half].tolist()
        return iter(out)

    def __len__(self):
        return self.num_samples


class Detector(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
        self.defects_per_batch = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        self.defects_per_batch.append(int(y.sum()))
        return nn.functional.cross_entropy(self.net(x), y)

    def on_train_epoch_end(self):
        per = self.defects_per_batch
        print(f"rank {self.global_rank} epoch {self.current_epoch}: {len(per)} batches, defects per batch "
              f"min {min(per)} max {max(per)}", flush=True)
        self.defects_per_batch = []

    def train_dataloader(self):
        ds = Parts()
        sampler = DistributedBalancedSampler(ds, ds.labels, BATCH, seed=0)
        return DataLoader(ds, batch_size=BATCH, sampler=sampler, num_workers=2, drop_last=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def main():
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=EPOCHS, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Detector())


if __name__ == "__main__":
    main()
