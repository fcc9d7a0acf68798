"""Scenario 39, measured: where else a stream's epoch goes missing, with persistent workers and without.

    python scenarios/39_stream_epoch_never_set/measure_other_streams.py

The same corpus (4 shards of 48 records), the same loop (2 forked workers, 4 epochs, the loop
calls set_epoch where the stream has one), four streams:
  derived      datasets: set_epoch on the shuffled stream, while the loader reads `.map()` of it, a
               new IterableDataset with an epoch of its own (trl#6351's nesting is the same miss)
  own_class    a hand-written torch IterableDataset whose set_epoch stores a plain int that its
               shuffle reads: the workers' copies keep the int they were made with (scenario 14)
  wds_seeded   webdataset 1.0.2: WebDataset(shardshuffle=4, seed=42).shuffle(64, seed=42); it has no
               set_epoch, and a fixed seed draws the same order on every iteration
  wds_detshuffle  webdataset 1.0.2 with detshuffle=True and a detshuffle stage: it counts epochs in
               the process that iterates it, the worker's copy
For each, the later epochs that repeat an earlier epoch's order, per worker setting.
"""
import random
import tempfile

import torch
import webdataset as wds
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from _epoch_orders import corpus, report

SHARDS, PER_SHARD, BATCH, EPOCHS, WORKERS = 4, 48, 16, 4, 2


class OwnShuffledShards(IterableDataset):
    """Shards split by worker, each worker's records shuffled with (seed, epoch): a common hand-written stream."""

    def __init__(self, seed=42):
        self.seed, self.epoch = seed, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        worker = get_worker_info()
        ids = [s * PER_SHARD + line for s in range(worker.id, SHARDS, worker.num_workers) for line in range(PER_SHARD)]
        random.Random(self.seed * 1000 + self.epoch * 10 + worker.id).shuffle(ids)
        yield from ({"id": i} for i in ids)


def write_shards(folder):
    for shard in range(SHARDS):
        with wds.TarWriter(f"{folder}/shard-{shard}.tar") as tar:
            for line in range(PER_SHARD):
                record = shard * PER_SHARD + line
                tar.write({"__key__": f"{record:05d}", "id.txt": str(record)})
    return [f"{folder}/shard-{shard}.tar" for shard in range(SHARDS)]


def streams(urls):
    def to_id(sample):
        return {"id": int(sample["id.txt"])}

    hf = corpus(SHARDS, PER_SHARD).shuffle(seed=42, buffer_size=64)
    return {
        "derived": (hf, hf.map(lambda record: record)),  # (what set_epoch is called on, what the loader reads)
        "own_class": (own := OwnShuffledShards(), own),
        "wds_seeded": (None, wds.WebDataset(urls, shardshuffle=4, seed=42).shuffle(64, seed=42).map(to_id)),
        "wds_detshuffle": (None, wds.WebDataset(urls, shardshuffle=4, detshuffle=True, seed=42)
                           .compose(wds.detshuffle(64, seed=42)).map(to_id)),
    }


def orders(told, read, persistent):
    loader = DataLoader(read, batch_size=BATCH, num_workers=WORKERS, persistent_workers=persistent,
                        multiprocessing_context="fork")
    seen = []
    for epoch in range(EPOCHS):
        if told is not None:
            told.set_epoch(epoch)
        seen.append([int(i) for batch in loader for i in torch.as_tensor(batch["id"])])
    return seen


def main():
    repeats = {}
    with tempfile.TemporaryDirectory(prefix="scenario39-") as folder:
        urls = write_shards(folder)
        for name, (told, read) in streams(urls).items():
            for setting in ("persistent", "fresh"):
                found = report(orders(told, read, setting == "persistent"), f"{name}, {setting} workers", BATCH)
                repeats.setdefault(name, []).append(found["epochs_repeating_order"])
                print(f"metric {name}_{setting}_repeats={found['epochs_repeating_order']}")
                print(f"metric {name}_{setting}_complete_epochs={found['complete_epochs']}")
    print(f"later epochs (of {EPOCHS - 1}) repeating an earlier order, persistent/fresh workers: "
          + ", ".join(f"{name} {persistent}/{fresh}" for name, (persistent, fresh) in repeats.items()))


if __name__ == "__main__":
    main()
