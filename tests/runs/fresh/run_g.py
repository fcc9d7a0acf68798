"""Sentiment toy model trained with transformers.Trainer, with token-dropout augmentation.

The augmentation generator is created on first use in each process and seeded
from torch's per-process seed, so every DataLoader worker draws its own stream.
"""
import os
import shutil
import tempfile
from collections import Counter

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset, get_worker_info
from transformers import Trainer, TrainingArguments

VOCAB = 300
SEQ = 24
PAD = 0


class Reviews(Dataset):
    def __init__(self, n, drop_p=0.0, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, 2, (n,), generator=g)
        base = torch.randint(2, VOCAB // 2, (n, SEQ), generator=g)
        self.tokens = base + self.labels[:, None] * (VOCAB // 2 - 2)
        self.drop_p = drop_p
        self._rng = None
        self._rng_pid = None

    def _generator(self):
        if self._rng is None or self._rng_pid != os.getpid():
            info = get_worker_info()
            seed = info.seed if info is not None else torch.initial_seed()
            self._rng = np.random.default_rng(seed % 2**63)
            self._rng_pid = os.getpid()
        return self._rng

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        toks = self.tokens[i].clone()
        mask_key = 0
        if self.drop_p > 0:
            drop = torch.from_numpy(self._generator().random(SEQ) < self.drop_p)
            toks[drop] = PAD
            mask_key = int("".join("1" if d else "0" for d in drop.tolist()), 2)
        return {"input_ids": toks, "labels": self.labels[i], "aug_key": torch.tensor(mask_key)}


class MeanPoolClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 32, padding_idx=PAD)
        self.head = nn.Linear(32, 2)
        self.aug_keys = []

    def forward(self, input_ids, labels=None, aug_key=None):
        if self.training and aug_key is not None:
            self.aug_keys.extend(aug_key.tolist())
        h = self.emb(input_ids)
        keep = (input_ids != PAD).float().unsqueeze(-1)
        pooled = (h * keep).sum(1) / keep.sum(1).clamp(min=1)
        logits = self.head(pooled)
        loss = F.cross_entropy(logits, labels) if labels is not None else None
        return {"loss": loss, "logits": logits}


def main():
    out = tempfile.mkdtemp(prefix="reviews-")
    try:
        train_ds = Reviews(160, drop_p=0.15, seed=0)
        eval_ds = Reviews(48, seed=1)
        model = MeanPoolClassifier()
        args = TrainingArguments(
            output_dir=out,
            num_train_epochs=2,
            per_device_train_batch_size=16,
            per_device_eval_batch_size=16,
            learning_rate=1e-2,
            eval_strategy="epoch",
            logging_steps=5,
            save_strategy="no",
            report_to="none",
            use_cpu=True,
            seed=7,
            dataloader_num_workers=2,
            disable_tqdm=True,
        )
        trainer = Trainer(model=model, args=args, train_dataset=train_ds, eval_dataset=eval_ds)
        trainer.train()
        metrics = trainer.evaluate()
        counts = Counter(model.aug_keys)
        print(f"eval loss {metrics['eval_loss']:.4f}; {len(model.aug_keys)} augmented samples, "
              f"{len(counts)} distinct dropout masks")
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
