"""Scenario 24, broken: a job resumed from a mid-epoch checkpoint starts its epoch over, in a new order.

    python scenarios/24_resume_mid_epoch/broken.py   # exits 1: samples trained on twice, others never
    python scenarios/24_resume_mid_epoch/fixed.py    # every sample exactly once, across the interruption

A training job reads 96 samples in batches of 8 (12 steps an epoch, 2 epochs) through a
shuffling DataLoader with 2 forked workers, and writes a checkpoint every 5 steps.  The
job really dies: after step 17 (epoch 1, 2 steps past its checkpoint at step 15) its
process and its workers get SIGKILL; a new process resumes from the checkpoint, as a job
restart does (_job.py).  The "model" records what it trained on, so the final checkpoint
counts, per sample and per epoch, what the job trained on across the interruption.
broken.py: the checkpoint holds the model, the epoch and the step; the resumed loop gets
a fresh iterator, which starts the epoch over in a new order, and runs the epoch's 9
remaining steps from its first batch: some samples twice in that epoch, as many never.
No error and no warning: the script counts them and exits 1.
fixed.py: torchdata's StatefulDataLoader; its state_dict() goes into the checkpoint and
load_state_dict() restores it: the resumed job trains on the batches attempt 1 lost, in
the same order, and every sample exactly once in each epoch.
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
        return {"index": index, "x": torch.full((4,), float(index))}


def train(job):
    loader = DataLoader(NumberedSamples(), BATCH, shuffle=True, num_workers=2, multiprocessing_context="fork")
    state = job.resume() or {"epoch": 0, "step": 0, "trained_on": []}
    while state["epoch"] < EPOCHS:
        for batch in loader:
            job.train_step(state, batch["index"])  # a real loop trains on batch["x"] here
            state["step"] += 1
            if len(state["trained_on"]) % SAVE_EVERY == 0:
                job.save(state)  # BUG: not where the loader is in its epoch: a resume starts it over, reshuffled
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
