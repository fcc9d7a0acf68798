"""Scenario 16, measurement: how much of a padded batch is padding, with and without bucketing.

    python scenarios/16_variable_size_samples/measure_bucketing.py

fixed.py pads each batch to its longest sequence.  With batches drawn at random (plain
shuffle), that longest sequence is often several times the typical one, and most of the
batch is padding: memory and compute spent on nothing.  This trains epochs each way, taking turns,
plain shuffled batches and LengthBucketBatchSampler's batches, with fixed.py's collate,
model and loop, and reports the padded fraction of each and the samples per second.  It
then shows the trade-off the sampler's pool size sets (sorting within a larger pool: less
padding, less random batches), computed from the lengths alone.
"""
import statistics

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from fixed import BATCH_SIZE, MeanOfEmbeddings, TokenSequences, sgd_step
from fixes.pad_collate import LengthBucketBatchSampler, PadCollate
from _token_corpus import EpochLog, make_corpus

ROUNDS = 5


def train_one_epoch(dataset, loader):
    torch.manual_seed(0)
    model, log = MeanOfEmbeddings(), EpochLog(dataset)
    for (tokens, lengths, mask), labels, indices in loader:
        loss = F.cross_entropy(model(tokens, mask), labels)
        model.zero_grad()
        loss.backward()
        sgd_step(model)
        log.batch(indices, tokens)
    return log


def padded_fraction(lengths, batches):
    real = sum(lengths[i] for batch in batches for i in batch)
    return 1 - real / sum(len(batch) * max(lengths[i] for i in batch) for batch in batches)


def main():
    torch.set_num_threads(1)
    dataset = TokenSequences(*make_corpus())
    options = dict(num_workers=2, collate_fn=PadCollate(pad_value=0))
    loaders = {
        "plain": lambda: DataLoader(dataset, batch_size=BATCH_SIZE, shuffle=True, **options,
                                    generator=torch.Generator().manual_seed(0)),
        "bucketed": lambda: DataLoader(dataset, batch_sampler=LengthBucketBatchSampler(
            dataset.lengths, batch_size=BATCH_SIZE, shuffle=True, seed=0), **options),
    }
    # An epoch here lasts some 60 ms, so one pause of the machine halves a rate: the two take
    # turns, ROUNDS epochs each, and the median rate stands.  Every round draws the same batches.
    rates, logs = {name: [] for name in loaders}, {}
    for _ in range(ROUNDS):
        for name, make in loaders.items():
            logs[name] = train_one_epoch(dataset, make())
            rates[name].append(logs[name].samples_per_s())
    for name, log in logs.items():
        print(f"metric padded_fraction_{name}={log.padding / log.positions:.4f}")
        print(f"metric samples_per_s_{name}={statistics.median(rates[name]):.0f}")
        print(f"{name:>8}: {log.positions} positions for {log.positions - log.padding} tokens, "
              f"{log.padding / log.positions:.1%} padding, {statistics.median(rates[name]):.0f} samples/s "
              f"(median of {ROUNDS} epochs)")
    print(f"metric positions_ratio={logs['plain'].positions / logs['bucketed'].positions:.2f}")
    for pool in (1, 2, 4, 8, 16, 32):
        batches = list(LengthBucketBatchSampler(dataset.lengths, BATCH_SIZE, seed=0, pool_batches=pool))
        print(f"metric padded_fraction_pool_{pool}={padded_fraction(dataset.lengths, batches):.4f}")


if __name__ == "__main__":
    main()
