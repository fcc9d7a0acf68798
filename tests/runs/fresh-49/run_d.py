"""Lightning GRU tagger with a "sortish" sampler, trained with DDP on 2 CPU processes.

`SortishSampler` shuffles the indices, cuts them into mega-batches of 8 batches and sorts each
mega-batch by length, so that every batch holds sequences of similar length and little padding. On
one device it keeps padding low; the same script is now run with `devices=2, strategy="ddp"`.
Each rank reports the padding share of the batches its training_step received.
"""
import os

import lightning as L
import torch
from torch import nn
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset, Sampler

N, BATCH, MEGA = 256, 8, 8


def lengths_for(n):
    g = torch.Generator().manual_seed(0)
    return torch.randint(4, 96, (n,), generator=g).tolist()


class Sentences(Dataset):
    def __init__(self):
        self.lengths = lengths_for(N)

    def __len__(self):
        return N

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        tokens = torch.randint(1, 200, (self.lengths[i],), generator=g)
        return tokens, tokens % 5


class SortishSampler(Sampler):
    def __init__(self, lengths, batch_size, seed=0):
        self.lengths, self.batch_size, self.seed, self.epoch = lengths, batch_size, seed, 0

    def __iter__(self):
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        idx = torch.randperm(len(self.lengths), generator=g).tolist()
        size = self.batch_size * MEGA
        out = []
        for start in range(0, len(idx), size):
            out += sorted(idx[start:start + size], key=lambda i: self.lengths[i], reverse=True)
        self.epoch += 1
        return iter(out)

    def __len__(self):
        return len(self.lengths)


def collate(batch):
    tokens, tags = zip(*batch)
    return pad_sequence(tokens, batch_first=True), pad_sequence(tags, batch_first=True, padding_value=-100)


def padding_share(batches):
    pad = sum(int((t == 0).sum()) for t in batches)
    return pad / sum(t.numel() for t in batches)


class Tagger(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(200, 32, padding_idx=0)
        self.rnn = nn.GRU(32, 32, batch_first=True)
        self.out = nn.Linear(32, 5)
        self.seen = []

    def training_step(self, batch, batch_idx):
        tokens, tags = batch
        self.seen.append(tokens)
        h, _ = self.rnn(self.emb(tokens))
        return nn.functional.cross_entropy(self.out(h).reshape(-1, 5), tags.reshape(-1), ignore_index=-100)

    def on_train_epoch_end(self):
        print(f"rank {self.global_rank}: {len(self.seen)} batches, padding {100 * padding_share(self.seen):.0f}% of "
              f"the tokens", flush=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)

    def train_dataloader(self):
        ds = Sentences()
        return DataLoader(ds, batch_size=BATCH, sampler=SortishSampler(ds.lengths, BATCH), collate_fn=collate,
                          num_workers=2)


def main():
    if "LOCAL_RANK" not in os.environ:  # what the sampler gives on one device
        ds = Sentences()
        order = list(SortishSampler(ds.lengths, BATCH))
        alone = [collate([ds[i] for i in order[s:s + BATCH]])[0] for s in range(0, N, BATCH)]
        print(f"single process: padding {100 * padding_share(alone):.0f}% of the tokens", flush=True)
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=1, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Tagger())


if __name__ == "__main__":
    main()
