"""Sequence-length curriculum for a small GRU tagger, persistent DataLoader workers.

The current epoch lives in a multiprocessing.Value so the long-lived workers
read the same value the training loop writes.
"""
import multiprocessing as mp
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

N = 240
MAX_LEN = 48
VOCAB = 50
MAX_LEN_BY_EPOCH = [12, 24, 36, 48]


class TaggingCorpus(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(3)
        self.tokens = torch.randint(1, VOCAB, (n, MAX_LEN), generator=g)
        self.tags = (self.tokens % 3)
        self._epoch = mp.Value("i", 0)

    def set_epoch(self, epoch):
        with self._epoch.get_lock():
            self._epoch.value = epoch

    def __len__(self):
        return len(self.tokens)

    def __getitem__(self, i):
        epoch = self._epoch.value
        cut = MAX_LEN_BY_EPOCH[min(epoch, len(MAX_LEN_BY_EPOCH) - 1)]
        return self.tokens[i, :cut], self.tags[i, :cut], torch.tensor(epoch)


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 32)
        self.rnn = nn.GRU(32, 32, batch_first=True)
        self.out = nn.Linear(32, 3)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.out(h)


def main():
    torch.manual_seed(0)
    ds = TaggingCorpus(N)
    loader = DataLoader(ds, batch_size=24, shuffle=True, num_workers=2, persistent_workers=True)
    model = Tagger()
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    for epoch in range(len(MAX_LEN_BY_EPOCH)):
        ds.set_epoch(epoch)
        t0 = time.time()
        lengths, epochs_seen, total = set(), set(), 0.0
        for x, y, ep in loader:
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, 3), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            lengths.add(x.shape[1])
            epochs_seen.update(ep.tolist())
        print(f"epoch {epoch}: sequence lengths {sorted(lengths)}, workers at epoch {sorted(epochs_seen)}, "
              f"loss {total / len(loader):.4f} ({time.time() - t0:.1f}s)")


if __name__ == "__main__":
    main()
