"""Intent classifier trained on support tickets, with a BPE tokenizer trained in the same script.

The script trains a byte-level BPE tokenizer on the ticket corpus, looks at the token lengths to
pick the padding length, then trains a bag-of-embeddings classifier; the DataLoader's collate
function tokenizes each batch with `encode_batch` in 2 worker processes.
"""
import random
import time

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from torch import nn
from torch.utils.data import DataLoader, Dataset

INTENTS = ["refund", "login", "shipping", "invoice"]
WORDS = {
    "refund": "money back return refund charge card cancel order paid twice".split(),
    "login": "password reset account locked sign in login email code two factor".split(),
    "shipping": "parcel delivery courier tracking late address package arrived box".split(),
    "invoice": "invoice billing vat receipt company tax pdf statement amount".split(),
}
FILLER = "please hi hello thanks urgent today yesterday again still not my the a is was".split()


def make_tickets(n, seed=0):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        label = rng.randrange(len(INTENTS))
        words = rng.choices(WORDS[INTENTS[label]], k=rng.randint(6, 14)) + rng.choices(FILLER, k=rng.randint(10, 30))
        rng.shuffle(words)
        out.append((" ".join(words), label))
    return out


class Tickets(Dataset):
    def __init__(self, rows):
        self.rows = rows

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return self.rows[i]


class Collate:
    def __init__(self, tokenizer, max_len):
        self.tokenizer, self.max_len = tokenizer, max_len

    def __call__(self, batch):
        texts, labels = zip(*batch)
        enc = self.tokenizer.encode_batch(list(texts))
        ids = torch.zeros(len(enc), self.max_len, dtype=torch.long)
        for row, e in enumerate(enc):
            t = e.ids[: self.max_len]
            ids[row, : len(t)] = torch.tensor(t)
        return ids, torch.tensor(labels)


class BagClassifier(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, 64, padding_idx=0)
        self.out = nn.Linear(64, len(INTENTS))

    def forward(self, ids):
        return self.out(self.emb(ids))


def main():
    rows = make_tickets(6000)
    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["[PAD]", "[UNK]"], show_progress=False)
    tokenizer.train_from_iterator((t for t, _ in rows), trainer=trainer)
    lengths = sorted(len(e.ids) for e in tokenizer.encode_batch([t for t, _ in rows[:1000]]))
    max_len = lengths[int(0.95 * len(lengths))]
    print(f"vocab {tokenizer.get_vocab_size()}, p95 length {max_len} tokens")

    loader = DataLoader(Tickets(rows), batch_size=64, shuffle=True, num_workers=2,
                        collate_fn=Collate(tokenizer, max_len))
    model = BagClassifier(tokenizer.get_vocab_size())
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    for epoch in range(2):
        t0, correct, seen = time.time(), 0, 0
        for ids, labels in loader:
            logits = model(ids)
            loss = nn.functional.cross_entropy(logits, labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            correct += int((logits.argmax(1) == labels).sum())
            seen += len(labels)
        dt = time.time() - t0
        print(f"epoch {epoch}: acc {correct / seen:.3f}, {seen / dt:.0f} tickets/s")


if __name__ == "__main__":
    main()
