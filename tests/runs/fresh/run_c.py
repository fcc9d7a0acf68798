"""Intent classifier trained with transformers.Trainer on a streamed JSONL corpus.

The corpus is sharded into several .jsonl files (as exported by the labelling
tool); it is streamed rather than loaded, so the train set is an IterableDataset.
"""
import json
import os
import shutil
import tempfile
from collections import Counter

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import IterableDataset
from transformers import Trainer, TrainingArguments

VOCAB = 200
SEQ = 16
N_SHARDS = 4
PER_SHARD = 16
BATCH = 8


def write_shards(root):
    g = torch.Generator().manual_seed(0)
    paths = []
    rid = 0
    for s in range(N_SHARDS):
        path = os.path.join(root, f"intents-{s:05d}.jsonl")
        with open(path, "w") as f:
            for _ in range(PER_SHARD):
                label = int(torch.randint(0, 3, (1,), generator=g))
                toks = (torch.randint(1, VOCAB, (SEQ,), generator=g) // 3 * 3 + label).clamp(max=VOCAB - 1)
                f.write(json.dumps({"id": rid, "tokens": toks.tolist(), "label": label}) + "\n")
                rid += 1
        paths.append(path)
    return paths


class JsonlStream(IterableDataset):
    def __init__(self, paths):
        self.paths = list(paths)

    def __iter__(self):
        for path in self.paths:
            with open(path) as f:
                for line in f:
                    rec = json.loads(line)
                    yield {
                        "input_ids": torch.tensor(rec["tokens"]),
                        "labels": torch.tensor(rec["label"]),
                        "record_id": torch.tensor(rec["id"]),
                    }


class BagOfEmbeddings(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(VOCAB, 32)
        self.head = nn.Linear(32, 3)
        self.seen_ids = []

    def forward(self, input_ids, labels=None, record_id=None):
        if self.training and record_id is not None:
            self.seen_ids.extend(record_id.tolist())
        logits = self.head(self.emb(input_ids))
        loss = F.cross_entropy(logits, labels) if labels is not None else None
        return {"loss": loss, "logits": logits}


def main():
    root = tempfile.mkdtemp(prefix="intents-")
    try:
        paths = write_shards(root)
        n_records = N_SHARDS * PER_SHARD
        steps_per_epoch = n_records // BATCH
        train_ds = JsonlStream(paths)
        model = BagOfEmbeddings()
        args = TrainingArguments(
            output_dir=os.path.join(root, "out"),
            per_device_train_batch_size=BATCH,
            max_steps=steps_per_epoch,          # one pass over the corpus
            learning_rate=5e-3,
            logging_steps=4,
            save_strategy="no",
            report_to="none",
            use_cpu=True,
            dataloader_num_workers=2,
            disable_tqdm=True,
        )
        trainer = Trainer(model=model, args=args, train_dataset=train_ds)
        trainer.train()

        counts = Counter(model.seen_ids)
        dupes = sum(c - 1 for c in counts.values() if c > 1)
        print(f"corpus: {n_records} records; trained on {len(model.seen_ids)} samples, "
              f"{len(counts)} distinct, {dupes} repeats, {n_records - len(counts)} never seen")
        print("most repeated record ids:", counts.most_common(5))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
