"""Seeds the loader's generator with the epoch before each epoch, so a resumed job draws the same
order, and skips the batches the checkpoint already trained on. A fix (it reloads those batches).
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
    order = torch.Generator()
    loader = DataLoader(NumberedSamples(), BATCH, shuffle=True, num_workers=2, multiprocessing_context="fork",
                        generator=order)
    state = job.resume() or {"epoch": 0, "step": 0, "trained_on": []}
    done = state["step"]  # batches of this epoch trained on before the checkpoint
    while state["epoch"] < EPOCHS:
        order.manual_seed(state["epoch"])  # the same order for an epoch, resumed or not
        for batch in loader:
            if done:  # fast-forward past what the checkpoint already has
                done -= 1
                continue
            job.train_step(state, batch["index"])  # a real loop trains on batch["x"] here
            state["step"] += 1
            if len(state["trained_on"]) % SAVE_EVERY == 0:
                job.save(state)  # BUG: the model, the epoch, the step; not where the loader is in its epoch
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
