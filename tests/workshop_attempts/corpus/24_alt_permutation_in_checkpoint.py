"""Scenario 24, attempt (alt): the epoch's shuffled order is drawn once, stored in the checkpoint
next to the step, and fed to the DataLoader through a sampler that starts at the checkpoint's
position.

Instead of torchdata's StatefulDataLoader, the loop owns the loader's state
itself: at the start of each epoch it draws a permutation into state["order"],
and an EpochOrderSampler yields that order from sample state["step"] * BATCH on.
The checkpoint holds the order and the step (both plain lists and ints), so the
resumed process builds the same sampler over the same permutation and its fresh
iterator starts at the first batch the checkpoint had not trained on: the steps
attempt 1 lost come back as the same batches, and every sample is trained on
exactly once per epoch.  The position comes from the training step, not from how
far the sampler has run, so the workers' prefetching (which pulls indices ahead)
cannot skew it.  A real fix: the loader's state (order and position) is saved and
restored with the model's; only the mechanism differs from fixed.py.
"""
import sys

import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from _job import SAVE_EVERY, report, run_job

SAMPLES, BATCH, EPOCHS = 96, 8, 2
KILL_AFTER_STEP = 17  # epoch 1, two steps past the checkpoint at step 15


class NumberedSamples(Dataset):
    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        return {"index": index, "x": torch.full((4,), float(index))}


class EpochOrderSampler(Sampler):
    """The epoch's order from state["order"], starting at the checkpoint's step."""

    def __init__(self, state):
        self.state = state

    def __len__(self):
        return SAMPLES  # the whole epoch, so that len(loader) stays the epoch's step count

    def __iter__(self):
        order = self.state["order"]
        return iter(order[self.state["step"] * BATCH:])  # read when the epoch's iterator starts


def train(job):
    state = job.resume() or {"epoch": 0, "step": 0, "trained_on": []}
    loader = DataLoader(NumberedSamples(), BATCH, sampler=EpochOrderSampler(state), num_workers=2,
                        multiprocessing_context="fork")
    while state["epoch"] < EPOCHS:
        if state["step"] == 0 or "order" not in state:  # a new epoch: a new order, saved with it
            state["order"] = torch.randperm(SAMPLES).tolist()
        for batch in loader:  # after a resume: on from the checkpoint's step, in the saved order
            job.train_step(state, batch["index"])  # a real loop trains on batch["x"] here
            state["step"] += 1
            if len(state["trained_on"]) % SAVE_EVERY == 0:
                job.save(state)  # the order and the step travel with the model
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
