"""ATTEMPT 32 partial: skips the batches already trained this epoch by count on the early iterator: the step is right, the samples are the new process's order.

Scenario 32, broken: the loader's state is loaded after its iterator was taken, and nothing uses it.

    python scenarios/32_stateful_loader_resume/broken.py   # exits 1: samples trained on twice, others never
    python scenarios/32_stateful_loader_resume/fixed.py    # every sample exactly once, across the interruption

The job of scenario 24 (96 samples in batches of 8, 12 steps an epoch, 2 epochs, 2 forked
workers, a checkpoint every 5 steps, SIGKILL after step 17, a fresh process resumes from
step 15), with its fix in place: torchdata's StatefulDataLoader, whose state_dict() goes
into every checkpoint and is given back with load_state_dict() on resume.  The loop is
step-based, as pretraining loops are: it takes the loader's iterator itself and calls
next() on it.  broken.py takes that iterator while setting up, before the checkpoint is
read.  load_state_dict() keeps the state for the *next* iter(); the iterator already taken
knows nothing of it and starts the epoch at its first batch, in the new process's order.
No error and no warning: the script counts per sample and exits 1.
fixed.py: the same lines, with load_state_dict() before the first iter().
"""
import sys

import torch
from torch.utils.data import Dataset
from torchdata.stateful_dataloader import StatefulDataLoader

from _interrupted_job import SAVE_EVERY, report, run_job

SAMPLES, BATCH, EPOCHS, WORKERS = 96, 8, 2, 2
STEPS = SAMPLES // BATCH  # an epoch
KILL_AFTER_STEP = 17  # epoch 1, two steps past the checkpoint at step 15


class NumberedSamples(Dataset):
    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        return {"index": index, "x": torch.full((4,), float(index))}


def train(job):
    loader = StatefulDataLoader(NumberedSamples(), BATCH, shuffle=True, num_workers=WORKERS,
                                multiprocessing_context="fork")
    batches = iter(loader)  # BUG: taken before the checkpoint's state is loaded: it starts at batch 0
    state = job.resume() or {"trained_on": []}
    if "loader" in state:
        loader.load_state_dict(state["loader"])
        for _ in range(len(state["trained_on"]) % STEPS):  # fast-forward to where the checkpoint was
            next(batches)
    while len(state["trained_on"]) < EPOCHS * STEPS:  # the global step, as a max_steps loop counts
        try:
            batch = next(batches)
        except StopIteration:  # an epoch's end: the next epoch's iterator
            batches = iter(loader)
            batch = next(batches)
        job.train_step(state, batch["index"])  # a real loop trains on batch["x"] here
        if len(state["trained_on"]) % SAVE_EVERY == 0:
            job.save(dict(state, loader=loader.state_dict()))
    job.save(state)


def main(training=train):
    job = run_job(training, KILL_AFTER_STEP)
    figures = report(job, SAMPLES, STEPS)
    for name, value in figures.items():
        print(f"metric {name}={value}")
    if figures["samples_seen_twice"] or figures["samples_never_seen"]:
        sys.exit(f"with the loader's state saved and loaded, {figures['samples_seen_twice']} of {SAMPLES} samples "
                 f"were trained on twice in epoch {figures['resumed_in_epoch']} and "
                 f"{figures['samples_never_seen']} never; torchdata said nothing")
    print(f"every one of {SAMPLES} samples trained on exactly once in each of {EPOCHS} epochs, "
          f"across the interruption at step {figures['resumed_at_step']}")


if __name__ == "__main__":
    main()
