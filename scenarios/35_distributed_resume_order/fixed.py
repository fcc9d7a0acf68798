"""Scenario 35, fixed: the loop sets the loader's epoch, so the resumed processes draw the epoch's own order.

    python scenarios/35_distributed_resume_order/broken.py   # exits 1: resumed epoch: samples twice, others never
    python scenarios/35_distributed_resume_order/fixed.py    # the resumed epoch is the uninterrupted one

An Accelerate training script, launched as users launch one:
`accelerate launch --multi_gpu --num_processes 2` (2 CPU processes, gloo).  It reads 96
samples in batches of 8 through a shuffling DataLoader with 2 workers per process; Accelerate
deals every second batch to each process (6 steps an epoch, 2 epochs), with both options it
offers for resuming and reproducing an order: `use_stateful_dataloader=True` (the loader's
position goes into the checkpoint) and `use_seedable_sampler=True` (an epoch's order is drawn
from seed + epoch).
At step 9 (epoch 1, 3 steps in) accelerator.save_state() writes a checkpoint; the job runs to
its end.  Then the same command starts it again, as a restarted job: 2 fresh processes,
accelerator.load_state() from step 9, and the loop goes on from epoch 1 (_relaunched_job.py).
Each rank logs what it trained on, and the script compares the resumed epoch 1 with the
uninterrupted one, sample by sample.
broken.py: the loader's position comes back (3 batches in), its epoch does not: Accelerate
counts epochs itself, in the process, and a fresh process counts from 0.  The resumed ranks
take batches 4-6 of epoch 0's order (seed + 0): in epoch 1, samples trained twice and as
many never.  No error, no warning: the script counts them and exits 1.
fixed.py: the loop sets the loader's epoch before each epoch's iterator is made.
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
    for epoch in range(step // len(loader), EPOCHS):
        loader.set_epoch(epoch)  # FIX: the epoch that draws the order, set before its iterator is made
        for batch in loader:
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
