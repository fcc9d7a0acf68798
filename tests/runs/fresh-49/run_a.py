"""Animal-sound classifier trained from webdataset shards.

The clips were exported species by species into tar shards (`cat-0000.tar`, `cat-0001.tar`,
`dog-0000.tar`, ...). Training reads them with `wds.WebDataset(urls, shardshuffle=True)`,
shuffles samples with `.shuffle(32)`, and batches through a DataLoader with 2 workers. The script
logs the species in each batch, since the loss curve looked step-shaped.
"""
import io
import os
import shutil
import tempfile
from collections import Counter

import numpy as np
import torch
import webdataset as wds
from torch import nn
from torch.utils.data import DataLoader

SPECIES = ["cat", "dog", "owl", "frog"]
SHARDS_PER_SPECIES, CLIPS_PER_SHARD, BATCH = 2, 40, 16


def write_shards(folder):
    rng = np.random.default_rng(0)
    urls = []
    for label, sp in enumerate(SPECIES):
        for s in range(SHARDS_PER_SPECIES):
            path = os.path.join(folder, f"{sp}-{s:04d}.tar")
            with wds.TarWriter(path) as sink:
                for k in range(CLIPS_PER_SHARD):
                    feats = (rng.normal(size=32) + label).astype(np.float32)
                    buf = io.BytesIO()
                    np.save(buf, feats)
                    sink.write({"__key__": f"{sp}_{s}_{k:04d}", "feats.npy": buf.getvalue(), "cls": str(label)})
            urls.append(path)
    return sorted(urls)


def to_sample(sample):
    feats = np.load(io.BytesIO(sample["feats.npy"]))
    return torch.from_numpy(feats), int(sample["cls"])


def main():
    folder = tempfile.mkdtemp(prefix="animal-wds-")
    try:
        urls = write_shards(folder)
        dataset = wds.WebDataset(urls, shardshuffle=True, empty_check=False).shuffle(32).map(to_sample)
        loader = DataLoader(dataset, batch_size=BATCH, num_workers=2)
        model = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, len(SPECIES)))
        opt = torch.optim.Adam(model.parameters(), lr=3e-3)
        for epoch in range(2):
            mixes = []
            for step, (x, y) in enumerate(loader):
                loss = nn.functional.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                mix = Counter(SPECIES[i] for i in y.tolist())
                mixes.append(len(mix))
                print(f"epoch {epoch} step {step:2d} loss {loss.item():.3f} batch {dict(mix)}")
            print(f"epoch {epoch}: {len(mixes)} batches, {np.mean(mixes):.2f} species per batch on average, "
                  f"{mixes.count(1)} batches of a single species")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
