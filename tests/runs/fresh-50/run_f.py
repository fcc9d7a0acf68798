"""Code-completion LM trained with Accelerate on a streamed, buffer-shuffled corpus.

The corpus is 2 JSONL files streamed with `load_dataset(..., streaming=True)`, one per
DataLoader worker. The prepared loader is iterated once per epoch; Accelerate hands the
epoch to the stream each time (its DataLoader wrapper calls `set_epoch` on the dataset).
"""
import json
import os
import shutil
import tempfile

import torch
import torch.nn as nn
from accelerate import Accelerator
from datasets import load_dataset
from torch.utils.data import DataLoader

CTX = 40
SNIPPETS = ["def f(x):", "return x", "for i in range(n):", "if a == b:", "import os",
            "print(y)", "x += 1", "while True:", "class A:", "yield item"]


def write_shards(root, n_files=2, rows_per_file=60):
    paths = []
    for f in range(n_files):
        path = os.path.join(root, f"code-{f}.jsonl")
        with open(path, "w") as fh:
            for r in range(rows_per_file):
                row = f * rows_per_file + r
                lines = [SNIPPETS[(row * 3 + k * (row % 4 + 2)) % len(SNIPPETS)] for k in range(5)]
                fh.write(json.dumps({"row": row, "content": "\n".join(lines)}) + "\n")
        paths.append(path)
    return paths


def encode(example):
    b = list(example["content"].encode()[: CTX + 1])
    return {"ids": b + [0] * (CTX + 1 - len(b))}


def collate(rows):
    ids = torch.tensor([r["ids"] for r in rows])
    return {"x": ids[:, :-1], "y": ids[:, 1:], "row": torch.tensor([r["row"] for r in rows])}


class ByteLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(256, 48)
        self.mix = nn.Conv1d(48, 48, 4, padding=3)
        self.out = nn.Linear(48, 256)

    def forward(self, x):
        h = self.emb(x).transpose(1, 2)
        h = torch.relu(self.mix(h)[..., : x.shape[1]]).transpose(1, 2)
        return self.out(h)


def main():
    root = tempfile.mkdtemp(prefix="accel_stream_")
    try:
        files = write_shards(root)
        stream = load_dataset("json", data_files=files, split="train", streaming=True,
                              cache_dir=os.path.join(root, "cache"))
        stream = stream.map(encode, remove_columns=["content"]).shuffle(seed=7, buffer_size=24)
        loader = DataLoader(stream, batch_size=12, num_workers=2, collate_fn=collate)

        accelerator = Accelerator(cpu=True)
        model = ByteLM()
        opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
        model, opt, loader = accelerator.prepare(model, opt, loader)

        for epoch in range(3):
            rows, total, steps = [], 0.0, 0
            for batch in loader:
                logits = model(batch["x"])
                loss = nn.functional.cross_entropy(logits.reshape(-1, 256), batch["y"].reshape(-1))
                accelerator.backward(loss)
                opt.step()
                opt.zero_grad()
                total += loss.item()
                steps += 1
                rows.extend(batch["row"].tolist())
            accelerator.print(f"epoch {epoch}: {len(rows)} rows ({len(set(rows))} distinct), "
                              f"loss {total / steps:.3f}, first rows {rows[:8]}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
