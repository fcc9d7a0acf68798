"""Scenario 24, myth check: "save the sampler's seed, and the resumed run gets the same order".

    python scenarios/24_resume_mid_epoch/myth_sampler_seed.py   # exits 1: the same counts as broken.py

broken.py with a seeded shuffle: the loader gets a generator seeded with SEED, and the seed
goes into the checkpoint and comes back from it.  The order is now reproducible, the same
in every run; the resume is not fixed.  The resumed loop still starts the epoch from its
first batch, and in the first epoch's order: the seed gives the generator's first
permutation, while the interrupted epoch (epoch 1) had been drawn second.  The script
checks that the resumed steps replay epoch 0's first batches, then counts per sample.
"""
import sys

import torch
from torch.utils.data import DataLoader

from _job import SAVE_EVERY, report, run_job
from broken import BATCH, EPOCHS, KILL_AFTER_STEP, SAMPLES, NumberedSamples

SEED = 0
STEPS = SAMPLES // BATCH


def train(job):
    state = job.resume() or {"epoch": 0, "step": 0, "trained_on": [], "seed": SEED}
    shuffle = torch.Generator().manual_seed(state["seed"])  # MYTH: the saved seed brings the order back
    loader = DataLoader(NumberedSamples(), BATCH, shuffle=True, num_workers=2, multiprocessing_context="fork",
                        generator=shuffle)
    while state["epoch"] < EPOCHS:
        for batch in loader:
            job.train_step(state, batch["index"])
            state["step"] += 1
            if len(state["trained_on"]) % SAVE_EVERY == 0:
                job.save(state)
            if state["step"] == len(loader):
                break
        state["epoch"], state["step"] = state["epoch"] + 1, 0
    job.save(state)


def main():
    job = run_job(train, KILL_AFTER_STEP)
    figures = report(job, SAMPLES, STEPS)
    resumed, trained = figures["resumed_at_step"], job["trained_on"]
    # The resumed steps against the first steps of epoch 0: the seed's first permutation again.
    after = len(trained) - resumed
    figures["resumed_steps_replaying_epoch_0"] = sum(trained[resumed + i] == trained[i] for i in range(after))
    figures["resumed_steps_not_replaying_epoch_0"] = after - figures["resumed_steps_replaying_epoch_0"]
    print(f"the {after} steps after the resume trained on epoch 0's first "
          f"{figures['resumed_steps_replaying_epoch_0']} batches again, in the same order")
    for name, value in figures.items():
        print(f"metric {name}={value}")
    if figures["samples_seen_twice"] or figures["samples_never_seen"]:
        sys.exit(f"with the sampler's seed saved and restored, {figures['samples_seen_twice']} of {SAMPLES} "
                 f"samples were trained on twice in epoch {figures['resumed_in_epoch']} and "
                 f"{figures['samples_never_seen']} never")
    print(f"every one of {SAMPLES} samples trained on exactly once in each of {EPOCHS} epochs")


if __name__ == "__main__":
    main()
