"""Scenario 24, measured: what resuming at step k costs, skipping batches against the StatefulDataLoader.

    python scenarios/24_resume_mid_epoch/measure_fast_forward.py

One process, 2 forked workers, the 96 samples of broken.py, each taking LOAD_S to load.
A first loader trains RESUME_AT steps of an epoch; then a new loader resumes that epoch
two ways: a plain DataLoader whose loop skips RESUME_AT batches (myth_skip_steps.py, with
the same seed, so the same order), and a StatefulDataLoader given the first one's
state_dict().  A counter shared with the workers counts every sample they load, and the
script times the wait for the first batch the resumed loop trains on.  torchdata's
docs say its fast-forward moves the sampler; this measures whether the data is loaded.
"""
import multiprocessing as mp
import time

import torch
from torch.utils.data import DataLoader, Dataset
from torchdata.stateful_dataloader import StatefulDataLoader

from broken import BATCH, SAMPLES

RESUME_AT, LOAD_S, SEED = 9, 0.005, 0  # resumed at step 9 of 12: 72 samples already trained on


class CountedSamples(Dataset):
    def __init__(self):
        self.loaded = mp.get_context("fork").Value("i", 0)  # shared with the forked workers

    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        time.sleep(LOAD_S)  # reading and decoding a sample
        with self.loaded.get_lock():
            self.loaded.value += 1
        return index


def trial(loader_class):
    """Train RESUME_AT steps, then resume the epoch in a new loader of the same class: the
    samples loaded in the resumed part, the wait for its first trained batch, all batches."""
    options = dict(batch_size=BATCH, shuffle=True, num_workers=2, multiprocessing_context="fork")
    stateful = loader_class is StatefulDataLoader
    torch.manual_seed(SEED)
    first, done = loader_class(CountedSamples(), **options), []
    for batch in first:
        done.append(batch.tolist())
        if len(done) == RESUME_AT:
            break
    state = first.state_dict() if stateful else None
    del first  # its workers end here

    torch.manual_seed(SEED)  # as a fresh process seeded the same way: the same order
    dataset = CountedSamples()
    loader = loader_class(dataset, **options)
    if stateful:
        loader.load_state_dict(state)
    skip = 0 if stateful else RESUME_AT
    started, resumed, first_wait = time.perf_counter(), [], None
    for i, batch in enumerate(loader):
        if i < skip:
            continue
        first_wait = first_wait or time.perf_counter() - started
        resumed.append(batch.tolist())
    whole = sorted(i for b in done + resumed for i in b) == list(range(SAMPLES))
    return dataset.loaded.value, first_wait, len(resumed), whole


def main():
    found = {"skip": trial(DataLoader), "stateful": trial(StatefulDataLoader)}
    for name, (loaded, wait, batches, whole) in found.items():
        print(f"{name}: {batches} batches trained after the resume at step {RESUME_AT}, {loaded} samples "
              f"loaded for them, the first after {wait * 1000:.0f} ms; every sample once in the epoch: {whole}")
        print(f"metric {name}_samples_loaded={loaded}")
        print(f"metric {name}_first_batch_ms={wait * 1000:.0f}")
        print(f"metric {name}_epoch_exactly_once={int(whole)}")
    (skip_loaded, skip_wait, *_), (kept_loaded, kept_wait, *_) = found["skip"], found["stateful"]
    print(f"skipping {RESUME_AT} batches loaded {skip_loaded - kept_loaded} samples more than the StatefulDataLoader "
          f"({skip_loaded} against {kept_loaded}) and waited {skip_wait / kept_wait:.1f}x as long for the first batch")
    print(f"metric extra_samples_loaded_by_skipping={skip_loaded - kept_loaded}")


if __name__ == "__main__":
    main()
