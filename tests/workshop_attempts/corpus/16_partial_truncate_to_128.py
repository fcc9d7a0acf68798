"""A collate of its own that pads each batch and returns a mask the model uses, but, "as
tokenizers do", cuts every sequence to at most 128 tokens first, to keep the batches small.
The batches now form and the padding is masked, but the long sequences are trained on their
first 128 tokens only: the model's output for them differs from its output for the whole
sequence. The crash fixed, the samples changed: half a fix.
"""
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

from _token_corpus import BATCH_SIZE, VOCAB, EpochLog, make_corpus


class TokenSequences(Dataset):
    def __init__(self, sequences, labels):
        self.tokens, self.labels = torch.cat(sequences), labels  # one flat tensor, not 512 (README: forkserver)
        self.lengths = [len(s) for s in sequences]  # known without loading: what a bucketing sampler needs
        self.starts = [0, *torch.tensor(self.lengths).cumsum(0).tolist()]

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return self.tokens[self.starts[index]:self.starts[index + 1]], self.labels[index], index


class MeanOfEmbeddings(nn.Module):
    """Bag-of-tokens classifier: a linear layer on the average token embedding."""

    def __init__(self, vocab=VOCAB, dim=16):
        super().__init__()
        self.embed, self.out = nn.Embedding(vocab, dim), nn.Linear(dim, 2)

    def forward(self, tokens, mask=None):
        if mask is None:  # every position holds a real token
            mask = torch.ones_like(tokens, dtype=torch.bool)
        summed = (self.embed(tokens) * mask.unsqueeze(-1)).sum(1)
        return self.out(summed / mask.sum(1, keepdim=True).clamp(min=1))


@torch.no_grad()
def sgd_step(model, lr=0.5):
    """Plain SGD, written out: torch.optim would add seconds of start-up (it imports torch._dynamo)."""
    for parameter in model.parameters():
        parameter -= lr * parameter.grad


MAX_TOKENS = 128


def truncate_and_pad(samples):
    """(tokens, labels, indices) -> (padded tokens, mask), labels, indices; at most MAX_TOKENS each."""
    sequences = [tokens[:MAX_TOKENS] for tokens, _, _ in samples]
    longest = max(len(s) for s in sequences)
    tokens = torch.zeros(len(sequences), longest, dtype=sequences[0].dtype)
    for row, sequence in enumerate(sequences):
        tokens[row, :len(sequence)] = sequence
    labels = torch.stack([torch.as_tensor(label) for _, label, _ in samples])
    indices = torch.tensor([index for _, _, index in samples])
    return (tokens, tokens != 0), labels, indices


def main(batch_size=BATCH_SIZE, num_workers=2):
    torch.manual_seed(0)
    torch.set_num_threads(1)  # the workers take the cores; more threads here would only fight them
    dataset, model = TokenSequences(*make_corpus()), MeanOfEmbeddings()
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers,
                        generator=torch.Generator().manual_seed(0), collate_fn=truncate_and_pad)
    log = EpochLog(dataset, model)
    try:
        for (tokens, mask), labels, indices in loader:
            loss = F.cross_entropy(model(tokens, mask), labels)
            model.zero_grad()
            loss.backward()
            sgd_step(model)
            log.batch(indices, tokens)
    finally:
        print(f"metric batches_trained={log.batches}")
    log.check(model)
    return log


if __name__ == "__main__":
    main()
