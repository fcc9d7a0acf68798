"""Scenario 24, attempt (shortcut): the DataLoader's workers hand back nothing useful and only tick
the loop; the training process picks each step's samples from its own per-epoch seeded permutation,
indexed by the checkpoint's step.

The dataset's __getitem__ now returns a constant, so the two workers deliver
batches of zeros that the loop throws away: the loader is kept only as a clock
of len(loader) ticks.  Each step's batch is built in the training process as
row `state["step"]` of torch.randperm(SAMPLES) seeded with the epoch, so after
the resume the remaining rows come out in attempt 1's order and every sample is
trained on exactly once per epoch.  But the loader does not resume at all: its
fresh iterator still starts a new shuffled epoch from its first batch, the
workers load and collate data no one uses, and the real loading (and any real
transform, decode or augmentation the dataset would do) has moved out of the
workers into the training step.  A shortcut with hollow workers, not a resume
of the DataLoader.
"""
import sys

import torch
from torch.utils.data import DataLoader, Dataset

from _job import SAVE_EVERY, report, run_job

SAMPLES, BATCH, EPOCHS = 96, 8, 2
KILL_AFTER_STEP = 17  # epoch 1, two steps past the checkpoint at step 15


class NumberedSamples(Dataset):
    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        return 0  # the training process builds the sample itself


def epoch_order(epoch):  # the same rows of indices in every process
    return torch.randperm(SAMPLES, generator=torch.Generator().manual_seed(epoch)).view(-1, BATCH)


def train(job):
    loader = DataLoader(NumberedSamples(), BATCH, shuffle=True, num_workers=2, multiprocessing_context="fork")
    state = job.resume() or {"epoch": 0, "step": 0, "trained_on": []}
    while state["epoch"] < EPOCHS:
        order = epoch_order(state["epoch"])
        for _ in loader:  # the workers' batch only says "next step"
            indices = order[state["step"]]
            batch = {"index": indices, "x": indices.float()[:, None].expand(-1, 4)}
            job.train_step(state, batch["index"])  # a real loop trains on batch["x"] here
            state["step"] += 1
            if len(state["trained_on"]) % SAVE_EVERY == 0:
                job.save(state)
            if state["step"] == len(loader):  # the epoch's last step (sooner after a resume)
                break
        state["epoch"], state["step"] = state["epoch"] + 1, 0
    job.save(state)


def main(training=train):
    job = run_job(training, KILL_AFTER_STEP)
    figures = report(job, SAMPLES, SAMPLES // BATCH)
    for name, value in figures.items():
        print(f"metric {name}={value}")
    if figures["samples_seen_twice"] or figures["samples_never_seen"]:
        sys.exit(f"across the interruption, {figures['samples_seen_twice']} of {SAMPLES} samples were "
                 f"trained on twice in epoch {figures['resumed_in_epoch']} and "
                 f"{figures['samples_never_seen']} never; PyTorch said nothing")
    print(f"every one of {SAMPLES} samples trained on exactly once in each of {EPOCHS} epochs, "
          f"across the interruption at step {figures['resumed_at_step']}")


if __name__ == "__main__":
    main()
