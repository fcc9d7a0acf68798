"""The corpus of scenario 16 and the checks a run makes on itself (imported by the scripts).

512 token sequences whose lengths follow a long-tailed (log-normal) distribution, as the
lengths of sentences, reviews or code files do: most are short, a few are ten times longer.
Token 0 is reserved for padding. The label says whether most of a sequence's tokens come
from the lower half of the vocabulary, which a mean of token embeddings can learn.
"""
import sys
import time

import torch

VOCAB = 1000
SEQUENCES = 512
BATCH_SIZE = 32


def make_corpus(n=SEQUENCES, seed=0):
    """(sequences, labels): n LongTensors of 4 to 512 tokens, and n labels 0 or 1."""
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.empty(n).log_normal_(mean=3.4, std=0.8, generator=generator).long().clamp(4, 512)
    sequences, labels = [], []
    for length in lengths.tolist():
        bias = torch.rand(1, generator=generator).item()  # this sequence's share of low tokens
        low = torch.rand(length, generator=generator) < bias
        tokens = torch.where(low, torch.randint(1, VOCAB // 2, (length,), generator=generator),
                             torch.randint(VOCAB // 2, VOCAB, (length,), generator=generator))
        sequences.append(tokens)
        labels.append(int(low.float().mean() > 0.5))
    return sequences, labels


class EpochLog:
    """What an epoch did: batches, samples seen, padding, time; and, at the end, checks."""

    def __init__(self, dataset, model=None):
        self.dataset, self.seen, self.batches = dataset, [], 0
        self.positions = self.padding = self.most_padding = 0
        self.started = self.last = None
        # With the mask, the padding token's embedding gets an exact zero gradient: it must end
        # the epoch bit for bit as it started.  Fed to the model as a word, it moves.
        self.padding_row = model.embed.weight[0].detach().clone() if model is not None else None

    def batch(self, indices, tokens):
        now = time.perf_counter()
        if self.started is None:  # time from the first batch on: worker start-up left out
            self.started, self.first_size = now, len(indices)
        self.last, self.batches = now, self.batches + 1
        self.seen += indices.tolist()
        self.positions += tokens.shape[0] * tokens.shape[1]
        padding = int((tokens == 0).sum())  # token 0 is only ever padding
        if padding >= self.most_padding:
            self.most_padding, self.most_padded_batch = padding, (tokens, indices)
        self.padding += padding

    def samples_per_s(self):
        """Samples per second after the first batch (start-up excluded)."""
        return (len(self.seen) - self.first_size) / max(self.last - self.started, 1e-9)

    @torch.no_grad()
    def check(self, model):
        """Each sample seen once; the model's output for each sequence of the most padded batch
        equals its output for that sequence alone (what the mask is for), and how far off it
        would be if the model ignored the mask."""
        if sorted(self.seen) != list(range(len(self.dataset))):
            sys.exit(f"the epoch saw {len(self.seen)} samples, {len(set(self.seen))} distinct, "
                     f"of {len(self.dataset)}: check the sampler")
        if self.padding_row is not None:
            drift = (model.embed.weight[0] - self.padding_row).abs().max().item()
            print(f"metric padding_embedding_drift={drift:.2e}")
            if drift:
                sys.exit(f"the padding token's embedding changed in training (by up to {drift:.2e}): "
                         "the model was fed padding as if it were text; pass the mask to the model")
        tokens, indices = self.most_padded_batch
        mask = tokens != 0
        alone = torch.cat([model(self.dataset[i][0][None]) for i in indices.tolist()])
        masked = (model(tokens, mask) - alone).abs().max().item()
        unmasked = (model(tokens) - alone).abs().max().item()
        print(f"metric samples_seen={len(self.seen)}")
        print(f"metric padded_fraction={self.padding / self.positions:.4f}")
        print(f"metric masked_output_error={masked:.2e}")
        print(f"metric unmasked_output_error={unmasked:.2e}")
        print(f"metric samples_per_s={self.samples_per_s():.0f}")
        print(f"each of the {len(self.seen)} sequences trained on once; {self.padding / self.positions:.1%} "
              f"of the batches' positions were padding; output with the mask matches each sequence "
              f"alone to {masked:.1e} (without the mask: off by {unmasked:.2f})")
