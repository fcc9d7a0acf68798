"""Bench part 4: the price of a fix on the happy path, where nothing goes wrong: ns per
sample with and without it, in the main process (no workers: the price is per sample,
wherever it runs)."""
from __future__ import annotations

import time

import torch
from torch.utils.data import Dataset, default_collate


class Samples(Dataset):
    def __init__(self, count, length=32):
        self.items = [(torch.full((length,), float(i)), i % 10) for i in range(count)]
        self.lookup = {i: i % 7 for i in range(count)}

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        return self.items[index]


class PlainLookup(Dataset):
    def __init__(self, table):
        self.table = table

    def __getitem__(self, index):
        return self.table[index]


class PerWorkerLookup(Dataset):
    def __init__(self, table):
        from fixes.per_worker import PerWorker

        self.table = PerWorker(dict, table)

    def __getitem__(self, index):
        return self.table.get()[index]


def _ns_per_sample(plain, fixed, samples: int, rounds: int = 5) -> tuple[float, float]:
    """Best of `rounds` for each, the two taken in turn so that a busy moment hits both."""
    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for which, work in enumerate((plain, fixed)):
            started = time.perf_counter_ns()
            work()
            best[which] = min(best[which], time.perf_counter_ns() - started)
    return best[0] / samples, best[1] / samples


def measure_happy_path(samples: int, batch_size: int = 32) -> dict:
    """ns per sample, plain and with each fix, on the same samples."""
    from fixes.bad_samples import SkipBadSamples, collate_good_samples
    from fixes.pad_collate import PadCollate

    data = Samples(samples)
    batches = [list(range(i, min(i + batch_size, samples))) for i in range(0, samples, batch_size)]
    skipping, padding = SkipBadSamples(data), PadCollate()
    plain_lookup, worker_lookup = PlainLookup(data.lookup), PerWorkerLookup(data.lookup)
    pairs = {
        "skip_bad_samples": (lambda: [default_collate([data[i] for i in b]) for b in batches],
                             lambda: [collate_good_samples([skipping[i] for i in b]) for b in batches]),
        "per_worker": (lambda: [plain_lookup[i] for i in range(samples)],
                       lambda: [worker_lookup[i] for i in range(samples)]),
        "pad_collate": (lambda: [default_collate([data[i] for i in b]) for b in batches],
                        lambda: [padding([data[i] for i in b]) for b in batches]),
    }
    found = {}
    for name, (plain, fixed) in pairs.items():
        plain_ns, fixed_ns = _ns_per_sample(plain, fixed, samples)
        found[name] = {"plain_ns": round(plain_ns), "fixed_ns": round(fixed_ns),
                       "extra_ns": round(fixed_ns - plain_ns)}
    return found
