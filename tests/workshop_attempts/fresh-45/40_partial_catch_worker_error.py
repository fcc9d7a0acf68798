"""ATTEMPT 40 partial: the step catches the DataLoader's "worker is killed by signal" RuntimeError during a preemption and writes the checkpoint anyway.

Kind: partial.  The training process survives and saves step 4, but the workers still die of the
scheduler's SIGTERM (they keep PyTorch's handler): the job only gets away with it because the
batch was already in hand.
"""
import signal
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

from _preempted_job import preempt_job

SAMPLES, BATCH, WORKERS = 96, 8, 2
STEP_S = 0.2  # the forward and backward pass, here a sleep
stop_requested = False


class NumberedSamples(Dataset):
    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        return {"index": index, "x": torch.full((4,), float(index))}


def request_stop(signum, frame):
    global stop_requested
    stop_requested = True  # the step in progress finishes; the loop below checkpoints and leaves


def train(checkpoint_path):
    signal.signal(signal.SIGTERM, request_stop)
    # BUG: each worker keeps PyTorch's own SIGTERM handler, which ends it: the scheduler's signal reaches it too
    loader = DataLoader(NumberedSamples(), BATCH, num_workers=WORKERS, multiprocessing_context="fork")
    trained_on = []  # one list of sample indices per step: the model's state, saved as weights are
    for step, batch in enumerate(loader):
        try:
            time.sleep(STEP_S)
        except RuntimeError:  # "DataLoader worker (pid N) is killed by signal": expected while being preempted
            if not stop_requested:
                raise
        trained_on.append(batch["index"].tolist())
        if stop_requested:
            torch.save({"trained_on": trained_on}, checkpoint_path)
            print(f"emergency checkpoint written at step {step}", flush=True)
            return
        print(f"step {step}: trained on samples {trained_on[-1][0]}-{trained_on[-1][-1]}", flush=True)
    torch.save({"trained_on": trained_on}, checkpoint_path)


def main():
    figures = preempt_job(train)
    if not figures:  # this process was the job itself
        return
    for name, value in figures.items():
        print(f"metric {name}={value}")
    written, jobs = figures["checkpoints_written"], figures["jobs_preempted"]
    if figures["checkpoints_at_step_in_progress"] < jobs or figures["jobs_exited_0"] < jobs:
        sys.exit(f"{written} of {jobs} preempted jobs wrote their emergency checkpoint; "
                 f"{figures['workers_gone_before_checkpoint']} of their {figures['workers_signalled']} "
                 f"DataLoader workers died of the signal before it")
    print(f"each of {jobs} preempted jobs wrote its emergency checkpoint at step 4 and exited 0")


if __name__ == "__main__":
    main()
