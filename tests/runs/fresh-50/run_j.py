"""Bird-call classifier on webdataset shards, Lightning DDP on 2 CPU processes.

The pipeline is webdataset's explicit DataPipeline: shard list, split by DataLoader worker,
tar reading, shuffle, decode. Lightning starts the second process and wraps the model in DDP.
"""
import datetime
import io
import os
import shutil
import tempfile

import lightning as L
import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import webdataset as wds
from lightning.pytorch.strategies import DDPStrategy
from torch.utils.data import DataLoader

N_SHARDS, PER_SHARD, N_SPECIES = 8, 12, 4


def write_shards(root):
    rng = np.random.default_rng(0)
    urls = []
    for s in range(N_SHARDS):
        url = os.path.join(root, f"calls-{s:04d}.tar")
        with wds.TarWriter(url) as sink:
            for k in range(PER_SHARD):
                species = (s * PER_SHARD + k) % N_SPECIES
                t = np.linspace(0, 1, 800, dtype=np.float32)
                clip = np.sin(2 * np.pi * (200 + 150 * species) * t) + 0.3 * rng.standard_normal(800)
                buf = io.BytesIO()
                np.save(buf, clip.astype(np.float32))
                sink.write({"__key__": f"s{s:02d}_{k:02d}", "npy": buf.getvalue(), "cls": species})
        urls.append(url)
    return urls


def make_pipeline(urls):
    return wds.DataPipeline(
        wds.SimpleShardList(urls),
        wds.split_by_worker,
        wds.tarfile_to_samples(),
        wds.shuffle(24),
        wds.decode(),
        wds.to_tuple("npy", "cls", "__key__"),
    )


class CallNet(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(1, 8, 9, stride=4), nn.ReLU(), nn.Conv1d(8, 16, 9, stride=4),
                                 nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(16, N_SPECIES))
        self.keys = []

    def training_step(self, batch, batch_idx):
        clip, species, keys = batch
        self.keys.extend(keys)
        return nn.functional.cross_entropy(self.net(clip.unsqueeze(1)), species)

    def on_train_end(self):
        every = [None] * self.trainer.world_size
        dist.all_gather_object(every, self.keys)
        if self.trainer.is_global_zero:
            for rank, keys in enumerate(every):
                print(f"rank {rank}: {len(keys)} clips ({len(set(keys))} distinct)", flush=True)
            print(f"clips on both ranks: {len(set(every[0]) & set(every[1]))} "
                  f"of {N_SHARDS * PER_SHARD}", flush=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def main():
    root = tempfile.mkdtemp(prefix="birdcalls_")
    try:
        urls = write_shards(root)
        loader = DataLoader(make_pipeline(urls), batch_size=8, num_workers=2)
        trainer = L.Trainer(accelerator="cpu", devices=2,
                            strategy=DDPStrategy(timeout=datetime.timedelta(seconds=20)),
                            max_epochs=1, logger=False, enable_checkpointing=False,
                            enable_progress_bar=False, enable_model_summary=False)
        trainer.fit(CallNet(), train_dataloaders=loader)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
