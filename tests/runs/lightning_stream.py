"""A Lightning training script as users write one: a stream of records read by 2 DataLoader workers
whose IterableDataset never asks which worker it runs in, so each worker yields every record (13).

    python tests/runs/lightning_stream.py [--split]     # --split: each worker takes its share
    python -m scenarios doctor -- python tests/runs/lightning_stream.py
"""
import sys

import lightning as L
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

SPLIT = "--split" in sys.argv


class Records(IterableDataset):
    def __iter__(self):
        info = get_worker_info()
        start, step = (info.id, info.num_workers) if SPLIT and info else (0, 1)
        for i in range(start, 256, step):
            yield torch.full((8,), float(i)), torch.tensor(i % 2)


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(8, 2)

    def training_step(self, batch, _):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.layer(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)

    def train_dataloader(self):
        return DataLoader(Records(), batch_size=16, num_workers=2)


if __name__ == "__main__":
    trainer = L.Trainer(max_epochs=2, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Classifier())
