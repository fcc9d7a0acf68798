"""Intent classifier over tokenised chat turns, with a compiled model.

Every batch is padded to its longest turn in the collate function (dynamic padding), and the
model is compiled with static shapes for speed. Runs on CPU: the aot_eager backend is used
there because the CI runners have no C++ toolchain for inductor.
"""
import random
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

VOCAB, PAD, N_INTENTS = 800, 0, 6


class Turns(Dataset):
    def __init__(self, n, seed=0):
        rng = random.Random(seed)
        self.items = []
        for _ in range(n):
            intent = rng.randrange(N_INTENTS)
            length = rng.randint(6, 70)
            ids = [rng.randrange(1, VOCAB) for _ in range(length)]
            ids[: 3] = [10 + intent, 20 + intent, 30 + intent]  # an intent cue at the start
            self.items.append((ids, intent))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        ids, intent = self.items[i]
        return torch.tensor(ids), intent


def pad_to_longest(batch):
    seqs, labels = zip(*batch)
    tokens = nn.utils.rnn.pad_sequence(seqs, batch_first=True, padding_value=PAD)
    return tokens, torch.tensor(labels)


class IntentModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 64, padding_idx=PAD)
        self.proj = nn.Linear(64, 64)
        self.out = nn.Linear(64, N_INTENTS)

    def forward(self, tokens):
        mask = (tokens != PAD).unsqueeze(-1).float()
        h = torch.relu(self.proj(self.emb(tokens))) * mask
        return self.out(h.sum(1) / mask.sum(1).clamp(min=1))


def main():
    torch.manual_seed(0)
    loader = DataLoader(Turns(46), batch_size=4, shuffle=True, num_workers=2,
                        collate_fn=pad_to_longest)
    model = IntentModel()
    compiled = torch.compile(model, dynamic=False, backend="aot_eager")
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)

    for epoch in range(3):
        t0, slow_steps, total = time.perf_counter(), 0, 0.0
        for tokens, labels in loader:
            ts = time.perf_counter()
            loss = nn.functional.cross_entropy(compiled(tokens), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            if time.perf_counter() - ts > 0.1:
                slow_steps += 1
        print(f"epoch {epoch}: loss {total / len(loader):.3f}, {len(loader)} steps, "
              f"{slow_steps} slow steps, {time.perf_counter() - t0:.1f}s", flush=True)


if __name__ == "__main__":
    main()
