"""Continued pre-training of a tiny character LM on a streamed JSONL corpus, several epochs.

The corpus is streamed (`load_dataset(..., streaming=True)`) and shuffled with a buffer;
the loop runs `num_epochs` passes over it with a plain DataLoader and 2 workers.
"""
import json
import os
import shutil
import tempfile

import torch
import torch.nn as nn
from datasets import load_dataset
from torch.utils.data import DataLoader

SEQ = 48
WORDS = ["alpha", "beta", "gamma", "delta", "kappa", "sigma", "omega", "theta", "lambda", "zeta"]


def write_corpus(root, n_files=4, docs_per_file=32):
    paths = []
    for f in range(n_files):
        path = os.path.join(root, f"corpus-{f:02d}.jsonl")
        with open(path, "w") as fh:
            for d in range(docs_per_file):
                doc_id = f * docs_per_file + d
                text = " ".join(WORDS[(doc_id * 7 + k * (doc_id % 3 + 1)) % len(WORDS)] for k in range(12))
                fh.write(json.dumps({"id": doc_id, "text": text}) + "\n")
        paths.append(path)
    return paths


def to_ids(example):
    codes = [min(ord(c), 127) for c in example["text"][: SEQ + 1]]
    codes += [0] * (SEQ + 1 - len(codes))
    return {"input_ids": codes}


def collate(rows):
    ids = torch.tensor([r["input_ids"] for r in rows])
    return ids[:, :-1], ids[:, 1:], [r["id"] for r in rows]


class CharLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(128, 64)
        self.rnn = nn.GRU(64, 96, batch_first=True)
        self.out = nn.Linear(96, 128)

    def forward(self, x):
        return self.out(self.rnn(self.emb(x))[0])


def main():
    root = tempfile.mkdtemp(prefix="stream_pt_")
    try:
        files = write_corpus(root)
        stream = load_dataset("json", data_files=files, split="train", streaming=True,
                              cache_dir=os.path.join(root, "cache"))
        stream = stream.map(to_ids).shuffle(seed=42, buffer_size=32)
        loader = DataLoader(stream, batch_size=16, num_workers=2, collate_fn=collate)

        torch.manual_seed(0)
        model = CharLM()
        opt = torch.optim.Adam(model.parameters(), lr=3e-3)
        num_epochs = 3
        for epoch in range(num_epochs):
            order, losses = [], []
            for x, y, ids in loader:
                loss = nn.functional.cross_entropy(model(x).reshape(-1, 128), y.reshape(-1))
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
                order.extend(ids)
            print(f"epoch {epoch}: {len(order)} docs, first loss {losses[0]:.3f}, "
                  f"last loss {losses[-1]:.3f}, first docs {order[:8]}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
