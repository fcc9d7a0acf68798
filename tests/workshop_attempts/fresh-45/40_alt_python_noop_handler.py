"""ATTEMPT 40 alt: a picklable worker_init_fn object that replaces PyTorch's C SIGTERM handler (and SIGINT's) in each worker with a Python handler that does nothing.

Kind: alt.  The worker catches the scheduler's signal instead of dying of it (SigCgt rather than
SigIgn); its loop goes on until the training process, which got the same signal, writes the
checkpoint and shuts its iterator down.
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


class LeaveShutdownToTrainer:
    """worker_init_fn: the job's SIGTERM/SIGINT are the training process's to act on, not the worker's."""

    def __call__(self, worker_id):
        signal.signal(signal.SIGTERM, self.noted)
        signal.signal(signal.SIGINT, self.noted)

    @staticmethod
    def noted(signum, frame):
        pass  # the training process got it too; it ends this worker through the loader when it is done


def request_stop(signum, frame):
    global stop_requested
    stop_requested = True  # the step in progress finishes; the loop below checkpoints and leaves


def train(checkpoint_path):
    signal.signal(signal.SIGTERM, request_stop)
    loader = DataLoader(NumberedSamples(), BATCH, num_workers=WORKERS, multiprocessing_context="fork",
                        worker_init_fn=LeaveShutdownToTrainer())
    trained_on = []  # one list of sample indices per step: the model's state, saved as weights are
    for step, batch in enumerate(loader):
        time.sleep(STEP_S)
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
