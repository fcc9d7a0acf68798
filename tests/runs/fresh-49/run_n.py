"""Lightning forecasting model trained on weather shards streamed by an IterableDataset.

`ShardDataset` reads `.npz` shards, shuffles the shard list and the samples in each shard with a
generator seeded from `seed + epoch`, and advances its own epoch counter at the end of every pass,
so that each epoch should get a new order. Shards are split between the DataLoader workers.
The model logs the first sample ids it sees in each epoch.
"""
import os
import random
import shutil
import tempfile

import lightning as L
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

N_SHARDS, PER_SHARD, BATCH, EPOCHS = 6, 32, 16, 3


class ShardDataset(IterableDataset):
    def __init__(self, files, seed=0):
        self.files, self.seed, self.epoch = files, seed, 0

    def __iter__(self):
        rng = random.Random(self.seed + self.epoch)
        files = list(self.files)
        rng.shuffle(files)
        info = get_worker_info()
        if info is not None:
            files = files[info.id::info.num_workers]
        for path in files:
            shard = np.load(path)
            order = list(range(len(shard["ids"])))
            rng.shuffle(order)
            for i in order:
                yield int(shard["ids"][i]), torch.from_numpy(shard["x"][i]), torch.from_numpy(shard["y"][i])
        self.epoch += 1


class Forecaster(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(24, 64), nn.ReLU(), nn.Linear(64, 6))
        self.first_ids = []

    def training_step(self, batch, batch_idx):
        ids, x, y = batch
        if batch_idx == 0:
            self.first_ids.append(ids[:8].tolist())
            print(f"epoch {self.current_epoch}: first ids {ids[:8].tolist()}", flush=True)
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def write_shards(folder):
    rng = np.random.default_rng(1)
    files = []
    for s in range(N_SHARDS):
        ids = np.arange(s * PER_SHARD, (s + 1) * PER_SHARD)
        x = rng.normal(size=(PER_SHARD, 24)).astype(np.float32)
        y = (x[:, :6] * 0.5 + rng.normal(scale=0.1, size=(PER_SHARD, 6))).astype(np.float32)
        path = os.path.join(folder, f"era5-{s:03d}.npz")
        np.savez(path, ids=ids, x=x, y=y)
        files.append(path)
    return files


def main():
    folder = tempfile.mkdtemp(prefix="weather-")
    try:
        files = write_shards(folder)
        loader = DataLoader(ShardDataset(files, seed=42), batch_size=BATCH, num_workers=2)
        model = Forecaster()
        trainer = L.Trainer(accelerator="cpu", devices=1, max_epochs=EPOCHS, logger=False,
                            enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                            default_root_dir=folder)
        trainer.fit(model, loader)
        repeats = sum(model.first_ids[e] == model.first_ids[0] for e in range(1, EPOCHS))
        print(f"{repeats} of {EPOCHS - 1} later epochs started with epoch 0's batch")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
