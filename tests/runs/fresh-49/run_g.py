"""Click-through model trained on a streamed JSON-lines export, several epochs, plain PyTorch loop.

The export is 4 JSON-lines files of shuffled event rows, streamed with
`load_dataset("json", ..., streaming=True)`, shuffled with a seeded buffer and read by a
DataLoader with 2 persistent workers (2 files each). The loop calls `set_epoch(epoch)` on the
dataset the loader reads at the top of every epoch, and logs the first row ids of each epoch.
"""
import json
import os
import shutil
import tempfile

import numpy as np
import torch
from datasets import load_dataset
from torch import nn
from torch.utils.data import DataLoader

FILES, ROWS_PER_FILE, BATCH, EPOCHS = 4, 64, 16, 3


def write_export(folder):
    rng = np.random.default_rng(0)
    ids = rng.permutation(FILES * ROWS_PER_FILE)
    paths = []
    for f in range(FILES):
        part = ids[f * ROWS_PER_FILE:(f + 1) * ROWS_PER_FILE]
        feats = rng.normal(size=(len(part), 12)).astype(np.float32)
        clicked = (feats[:, 0] + rng.normal(scale=0.5, size=len(part)) > 0).astype(np.int64)
        path = os.path.join(folder, f"events-{f:05d}.jsonl")
        with open(path, "w") as out:
            for r, x, c in zip(part.tolist(), feats.tolist(), clicked.tolist()):
                out.write(json.dumps({"row_id": r, "features": x, "clicked": c}) + "\n")
        paths.append(path)
    return paths


def main():
    folder = tempfile.mkdtemp(prefix="ctr-")
    try:
        files = write_export(folder)
        stream = load_dataset("json", data_files=files, split="train", streaming=True,
                              cache_dir=os.path.join(folder, "hf-cache"))
        stream = stream.shuffle(seed=1234, buffer_size=64).with_format("torch")
        loader = DataLoader(stream, batch_size=BATCH, num_workers=2, persistent_workers=True)
        model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 1))
        opt = torch.optim.Adam(model.parameters(), lr=1e-2)
        firsts = []
        for epoch in range(EPOCHS):
            loader.dataset.set_epoch(epoch)
            seen = []
            for batch in loader:
                logits = model(batch["features"]).squeeze(1)
                loss = nn.functional.binary_cross_entropy_with_logits(logits, batch["clicked"].float())
                opt.zero_grad()
                loss.backward()
                opt.step()
                seen += batch["row_id"].tolist()
            firsts.append(seen[:8])
            print(f"epoch {epoch}: {len(seen)} rows ({len(set(seen))} distinct), loss {loss.item():.3f}, "
                  f"first ids {seen[:8]}", flush=True)
        print(f"distinct epoch orders: {len({tuple(f) for f in firsts})} of {EPOCHS}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
