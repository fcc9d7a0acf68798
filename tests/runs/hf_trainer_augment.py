"""A Hugging Face Trainer script as users write one: a map-style dataset that crops with a numpy
Generator it holds, read by 2 DataLoader workers.  The Trainer seeds each worker (seed_worker), but a
Generator on the dataset is copied into both workers at the fork: they draw the same crops (12).

    python tests/runs/hf_trainer_augment.py [--per-worker]   # --per-worker: a Generator per worker
    python -m scenarios doctor -- python tests/runs/hf_trainer_augment.py
"""
import sys
import tempfile

import numpy as np
import torch
from torch.utils.data import Dataset, get_worker_info
from transformers import Trainer, TrainingArguments

PER_WORKER = "--per-worker" in sys.argv


class Crops(Dataset):
    def __init__(self):
        self.images = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
        self.rng = np.random.default_rng(0)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        info = get_worker_info()
        if PER_WORKER and info is not None and not getattr(self, "_reseeded", False):
            self.rng, self._reseeded = np.random.default_rng(info.seed % 2**32), True
        start = self.rng.integers(0, 16)
        return {"x": torch.from_numpy(self.images[index, start:start + 16].copy()), "labels": torch.tensor(index % 2)}


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(16, 2)

    def forward(self, x, labels):
        logits = self.layer(x)
        return {"loss": torch.nn.functional.cross_entropy(logits, labels), "logits": logits}


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(output_dir=out, per_device_train_batch_size=8, num_train_epochs=2,
                                 dataloader_num_workers=2, use_cpu=True, report_to=[], save_strategy="no",
                                 logging_strategy="no", disable_tqdm=True)
        Trainer(model=Model(), args=args, train_dataset=Crops()).train()
