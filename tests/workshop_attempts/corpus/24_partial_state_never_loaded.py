"""Switches to torchdata's StatefulDataLoader and saves its state_dict() in the checkpoint, but
never calls load_state_dict() on resume: the resumed epoch starts over in a new order.
"""
import sys

import torch
from torch.utils.data import Dataset
from torchdata.stateful_dataloader import StatefulDataLoader

from _job import SAVE_EVERY, report, run_job

SAMPLES, BATCH, EPOCHS = 96, 8, 2
KILL_AFTER_STEP = 17  # epoch 1, two steps past the checkpoint at step 15


class NumberedSamples(Dataset):
    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        return {"index": index, "x": torch.full((4,), float(index))}


def train(job):
    loader = StatefulDataLoader(NumberedSamples(), BATCH, shuffle=True, num_workers=2, multiprocessing_context="fork")
    state = job.resume() or {"epoch": 0, "step": 0, "trained_on": []}
    while state["epoch"] < EPOCHS:
        for batch in loader:  # after a resume: a new iterator, from the top of a new order
            job.train_step(state, batch["index"])  # a real loop trains on batch["x"] here
            state["step"] += 1
            if len(state["trained_on"]) % SAVE_EVERY == 0:
                # BUG: the model, the epoch, the step; not where the loader is in its epoch
                job.save(dict(state, loader=loader.state_dict()))
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
