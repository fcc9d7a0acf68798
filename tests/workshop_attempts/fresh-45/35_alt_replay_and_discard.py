"""ATTEMPT 35 alt: on a resume, rebuild the loader and replay the data from the job's start, discarding the batches already trained.

Kind: alt.  The restored position is only a count, so this attendee does not trust it: the
restarted process loads everything (model, optimizer, random states) from the checkpoint, then
prepares a fresh loader and runs it from epoch 0, skipping the first `step` batches without
training on them.  Accelerate's counter then reaches epoch 1 by itself, as in the uninterrupted
run, and the trained batches are the uninterrupted ones.  Costs a replay of 9 batches per rank.
"""
import sys

import torch
from accelerate import Accelerator, DataLoaderConfiguration
from accelerate.utils import set_seed
from torch.utils.data import DataLoader, Dataset

from _relaunched_job import SAVE_AT_STEP, report, run_job

SAMPLES, BATCH, EPOCHS, SEED = 96, 8, 2, 0


class NumberedSamples(Dataset):
    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        return {"index": index, "x": torch.full((4,), float(index)), "y": torch.tensor(float(index % 3))}


def train(job):
    config = DataLoaderConfiguration(use_stateful_dataloader=True, use_seedable_sampler=True)
    accelerator = Accelerator(cpu=True, dataloader_config=config)
    set_seed(SEED)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
    loader = DataLoader(NumberedSamples(), BATCH, shuffle=True, num_workers=2)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    step, checkpoint = 0, job.last_checkpoint()
    if checkpoint:  # a restarted job: the model, the optimizer, the random states, the loader's position
        accelerator.load_state(checkpoint[0])
        step = checkpoint[1]
        # the restored loader would skip 3 batches of whatever epoch it thinks it is in: replay instead
        loader = accelerator.prepare(DataLoader(NumberedSamples(), BATCH, shuffle=True, num_workers=2))
    already_trained = step
    for epoch in range(EPOCHS):
        for batch in loader:  # from the job's first batch: Accelerate counts the epochs as the first run did
            if already_trained:  # trained before the checkpoint: drawn, not trained again
                already_trained -= 1
                continue
            loss = torch.nn.functional.mse_loss(model(batch["x"]).squeeze(1), batch["y"])
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            step += 1
            job.trained(step, batch["index"])
            if step == SAVE_AT_STEP:
                accelerator.save_state(job.checkpoint(step))


def main(training=train):
    logs = run_job(training)  # in each of the 2 processes: training(job), then exit
    figures = report(logs, SAMPLES, BATCH, SEED)
    for name, value in figures.items():
        print(f"metric {name}={value}")
    if figures["samples_seen_twice"] or figures["samples_never_seen"]:
        sys.exit(f"resumed on 2 processes, epoch {figures['resumed_in_epoch']} trained {figures['samples_seen_twice']} "
                 f"of {SAMPLES} samples twice and {figures['samples_never_seen']} never; Accelerate said nothing")
    print(f"resumed on 2 processes at step {figures['resumed_at_step']}: each rank trained epoch "
          f"{figures['resumed_in_epoch']} batch for batch as the uninterrupted run did, every sample once")


if __name__ == "__main__":
    main()
