"""Compiled transformer-encoder classifier on variable-length token sequences.

Batches are padded dynamically (to the longest sequence in the batch) to avoid
wasting compute on padding. The model is compiled with static shapes for the
fastest kernels; aot_eager keeps compile time short on the CPU dev box.
"""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

VOCAB = 100
PAD = 0
N = 90
BATCH = 8
EPOCHS = 2


class Utterances(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(0)
        self.lengths = torch.randint(6, 64, (n,), generator=g).tolist()
        self.seqs = [torch.randint(1, VOCAB, (L,), generator=g) for L in self.lengths]
        self.labels = torch.tensor([int(s.float().mean() > VOCAB / 2) for s in self.seqs])

    def __len__(self):
        return len(self.seqs)

    def __getitem__(self, i):
        return self.seqs[i], self.labels[i]


def pad_collate(batch):
    seqs, labels = zip(*batch)
    longest = max(len(s) for s in seqs)
    tokens = torch.full((len(seqs), longest), PAD, dtype=torch.long)
    for row, s in enumerate(seqs):
        tokens[row, :len(s)] = s
    return tokens, torch.stack(labels)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 32, padding_idx=PAD)
        layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True, dropout=0.0)
        self.enc = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.head = nn.Linear(32, 2)

    def forward(self, tokens):
        pad_mask = tokens == PAD
        h = self.enc(self.emb(tokens), src_key_padding_mask=pad_mask)
        keep = (~pad_mask).unsqueeze(-1).float()
        return self.head((h * keep).sum(1) / keep.sum(1))


def main():
    torch.manual_seed(0)
    loader = DataLoader(Utterances(N), batch_size=BATCH, shuffle=True, num_workers=2,
                        collate_fn=pad_collate)
    model = Encoder()
    cmodel = torch.compile(model, dynamic=False, backend="aot_eager")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    shapes = set()
    for epoch in range(EPOCHS):
        t0 = time.time()
        step_times = []
        for tokens, labels in loader:
            s = time.time()
            loss = F.cross_entropy(cmodel(tokens), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step_times.append(time.time() - s)
            shapes.add(tuple(tokens.shape))
        print(f"epoch {epoch}: {len(step_times)} steps in {time.time() - t0:.1f}s, "
              f"slowest step {max(step_times):.2f}s, median {sorted(step_times)[len(step_times) // 2]:.3f}s")

    from torch._dynamo.utils import counters
    print(f"{len(shapes)} distinct batch shapes; dynamo graphs compiled: "
          f"{counters['stats']['unique_graphs']}")


if __name__ == "__main__":
    main()
