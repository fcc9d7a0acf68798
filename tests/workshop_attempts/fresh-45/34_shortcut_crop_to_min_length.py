"""ATTEMPT 34 shortcut: every sequence cropped to 8 tokens and the ragged batch dropped: one shape, most of the text never trained.

Scenario 34, broken: every new batch shape from the loader is a new graph, until dynamo gives up.

    python scenarios/34_compile_recompiles_on_batch_shapes/broken.py   # exits 1: recompile limit hit
    python scenarios/34_compile_recompiles_on_batch_shapes/fixed.py    # a few graphs, every step compiled

A token model trained 3 epochs on 30 sequences of 8-64 tokens, in batches of 4 from 2 workers, its
step under torch.compile(dynamic=False; backend aot_eager: the guards are dynamo's, whatever the
backend).  The collate pads each batch to its longest sequence and the last batch holds 2: each new
(batch, length) recompiles; past 8 graphs dynamo runs new shapes uncompiled (torch's own counters;
set_logs(recompiles=True) prints each reason).  fixed.py: drop_last=True, lengths rounded up to 16.
"""
import sys

import torch
from torch.utils.data import DataLoader, Dataset

SAMPLES, BATCH, EPOCHS, WORKERS, VOCAB = 30, 4, 3, 2, 100


class Sequences(Dataset):
    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        length = int(torch.randint(8, 65, (1,), generator=torch.Generator().manual_seed(index)))
        return torch.randint(1, VOCAB, (length,), generator=torch.Generator().manual_seed(SAMPLES + index))


def pad(samples):
    return torch.stack([s[:8] for s in samples])  # one fixed length: no recompiles


class TokenModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed, self.head = torch.nn.Embedding(VOCAB, 16), torch.nn.Linear(16, VOCAB)
        self.eager_steps = 0  # steps Python ran this forward itself: no compiled graph took them

    def forward(self, tokens):
        if not torch.compiler.is_compiling():
            self.eager_steps += 1
        logits = self.head(self.embed(tokens))
        return torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten())


def train():
    torch.manual_seed(0)
    torch._logging.set_logs(recompiles=True)
    model = TokenModel()
    step = torch.compile(model, backend="aot_eager", dynamic=False)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(Sequences(), BATCH, shuffle=True, num_workers=WORKERS, collate_fn=pad, drop_last=True,
                        multiprocessing_context="fork")
    shapes = set()
    for _ in range(EPOCHS):
        for tokens in loader:
            step(tokens).backward()
            optimizer.step()
            optimizer.zero_grad()
            shapes.add(tuple(tokens.shape))
    return model, shapes


def main():
    model, shapes = train()
    counters = torch._dynamo.utils.counters
    figures = {"batch_shapes": len(shapes), "graphs": counters["stats"]["unique_graphs"],
               "recompiles": counters["frames"]["total"] - 1,
               "frames_refused": counters["frames"]["total"] - counters["frames"]["ok"],
               "eager_steps": model.eager_steps}
    print("\n".join(f"metric {name}={value}" for name, value in figures.items()))
    if figures["frames_refused"] or figures["graphs"] > 4:
        sys.exit(f"torch.compile built {figures['graphs']} graphs for {figures['batch_shapes']} batch shapes and "
                 f"ran {figures['eager_steps']} steps uncompiled")
    print(f"{figures['graphs']} graphs for {figures['batch_shapes']} batch shapes; every step ran compiled")


if __name__ == "__main__":
    main()
