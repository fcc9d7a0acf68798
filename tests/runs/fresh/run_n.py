"""Next-value regression on streamed sensor shards, Lightning + IterableDataset.

The stream shuffles its shard order with seed + epoch (set from the
LightningModule at the start of every epoch) and splits the shards across
DataLoader workers. Workers are kept alive between epochs.
"""
import os
import shutil
import tempfile

import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

N_SHARDS = 8
ROWS_PER_SHARD = 32
WINDOW = 16
EPOCHS = 3


def write_shards(root):
    g = torch.Generator().manual_seed(0)
    paths = []
    for s in range(N_SHARDS):
        t = torch.arange(ROWS_PER_SHARD * (WINDOW + 1), dtype=torch.float32)
        series = torch.sin(t / (5 + s)) + 0.05 * torch.randn(len(t), generator=g)
        path = os.path.join(root, f"sensor-{s:03d}.pt")
        torch.save(series.view(ROWS_PER_SHARD, WINDOW + 1), path)
        paths.append(path)
    return paths


class SensorStream(IterableDataset):
    def __init__(self, paths, seed=0):
        self.paths = list(paths)
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        order = [self.paths[i] for i in torch.randperm(len(self.paths), generator=g).tolist()]
        info = get_worker_info()
        if info is not None:
            order = order[info.id::info.num_workers]
        for path in order:
            shard_id = int(os.path.basename(path).split("-")[1].split(".")[0])
            for row in torch.load(path):
                yield row[:-1], row[-1:], shard_id


class SensorData(L.LightningDataModule):
    def __init__(self, paths):
        super().__init__()
        self.train_ds = SensorStream(paths, seed=1234)

    def train_dataloader(self):
        return DataLoader(self.train_ds, batch_size=ROWS_PER_SHARD, num_workers=2,
                          persistent_workers=True)


class NextValue(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(WINDOW, 32), nn.Tanh(), nn.Linear(32, 1))
        self.shard_order = {}

    def on_train_epoch_start(self):
        self.trainer.datamodule.train_ds.set_epoch(self.current_epoch)

    def training_step(self, batch, batch_idx):
        x, y, shard = batch
        self.shard_order.setdefault(self.current_epoch, []).append(int(shard[0]))
        loss = F.mse_loss(self.net(x), y)
        self.log("loss", loss)
        return loss

    def on_train_epoch_end(self):
        order = self.shard_order[self.current_epoch]
        print(f"epoch {self.current_epoch}: shard order {order}")

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2)


def main():
    root = tempfile.mkdtemp(prefix="sensor-")
    try:
        L.seed_everything(0)
        dm = SensorData(write_shards(root))
        trainer = L.Trainer(max_epochs=EPOCHS, accelerator="cpu", devices=1, logger=False,
                            enable_checkpointing=False, enable_progress_bar=False,
                            enable_model_summary=False)
        trainer.fit(NextValue(), datamodule=dm)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
