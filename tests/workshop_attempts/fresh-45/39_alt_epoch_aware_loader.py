"""ATTEMPT 39 alt: a DataLoader subclass tells its dataset the epoch each time an epoch's iterator is taken (as a framework's epoch hook would).

Scenario 39, broken: the loop never tells the streamed dataset its epoch; every epoch comes in the same order.

    python scenarios/39_stream_epoch_never_set/broken.py   # exits 1: epochs 1-3 repeat epoch 0's order exactly
    python scenarios/39_stream_epoch_never_set/fixed.py    # a new order every epoch, with and without persistence

A Hugging Face `datasets` IterableDataset, as `load_dataset(..., streaming=True)` gives one: 4
shards of 48 records (192), shuffled by its own `shuffle(seed=42, buffer_size=64)`, read by a
DataLoader with 2 forked workers for 4 epochs, once with persistent workers and once without.
The stream's shuffle seeds itself from its seed and its epoch, and its epoch is what the loop
last gave `set_epoch`: never called, it stays 0.  No error and no warning; the script records
the ids of every epoch and exits 1 when an epoch repeats an earlier epoch's order.
fixed.py: the same lines, with `stream.set_epoch(epoch)` before each epoch.
"""
import sys

from torch.utils.data import DataLoader

from _epoch_orders import corpus, report

SHARDS, PER_SHARD, BATCH, EPOCHS, WORKERS = 4, 48, 16, 4, 2
SAMPLES = SHARDS * PER_SHARD


class EpochAwareLoader(DataLoader):
    """Calls dataset.set_epoch(n) before the n-th iter(), so the loop cannot forget it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.epochs_started = 0

    def __iter__(self):
        self.dataset.set_epoch(self.epochs_started)
        self.epochs_started += 1
        return super().__iter__()


def epoch_orders(persistent):
    stream = corpus(SHARDS, PER_SHARD).shuffle(seed=42, buffer_size=64)
    loader = EpochAwareLoader(stream, batch_size=BATCH, num_workers=WORKERS, persistent_workers=persistent,
                        multiprocessing_context="fork")
    orders = []
    for epoch in range(EPOCHS):
        # BUG: the stream is never told the epoch: its shuffle draws the same seed every epoch
        orders.append([int(i) for batch in loader for i in batch["id"]])
    return orders


def main():
    figures = {setting: report(epoch_orders(setting == "persistent"), f"{setting} workers", BATCH)
               for setting in ("persistent", "fresh")}
    for setting, found in figures.items():
        for name, value in found.items():
            print(f"metric {setting}_{name}={value}")
    repeats = {setting: found["epochs_repeating_order"] for setting, found in figures.items()}
    if any(repeats.values()):
        sys.exit(f"{repeats['persistent']} of {EPOCHS - 1} later epochs repeated an earlier epoch's order with "
                 f"persistent workers, {repeats['fresh']} of {EPOCHS - 1} with fresh workers: the shuffle "
                 "never heard the epoch; datasets said nothing")
    print(f"each of {EPOCHS} epochs came in its own order of all {SAMPLES} samples, with persistent workers "
          "and with fresh ones")


if __name__ == "__main__":
    main()
