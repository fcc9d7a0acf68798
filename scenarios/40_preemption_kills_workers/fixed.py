"""Scenario 40, fixed: the workers ignore the scheduler's SIGTERM; the job checkpoints, then ends them itself.

    python scenarios/40_preemption_kills_workers/broken.py    # or fixed.py

A preemption-aware training job (96 samples in batches of 8, 2 forked workers): its SIGTERM
handler only sets a flag, and the loop writes a checkpoint after the step in progress, then
leaves.  The script plays the scheduler 3 times: it starts the job in a session of its own
and, once the job reports step 3, sends SIGTERM to the job's whole process group (os.killpg),
as `scancel`, a preemption or a time limit's warning reach every process of a Slurm step.
It then watches the job for 10 s and counts the checkpoints written after the signal.

broken.py: each job dies within a fraction of a second with PyTorch's "RuntimeError: DataLoader
worker (pid N) is killed by signal: Terminated." and writes nothing; the script exits 1 with
"0 of 3 preempted jobs wrote their emergency checkpoint".
fixed.py: "each of 3 preempted jobs wrote its emergency checkpoint at step 4 and exited 0".
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


def leave_shutdown_to_trainer(worker_id):
    # FIX: the scheduler's SIGTERM (and a terminal's SIGINT) reaches every worker too; ignored there, the
    # training process decides: it checkpoints, and its iterator's shutdown then ends the workers
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def train(checkpoint_path):
    signal.signal(signal.SIGTERM, request_stop)
    loader = DataLoader(NumberedSamples(), BATCH, num_workers=WORKERS, multiprocessing_context="fork",
                        worker_init_fn=leave_shutdown_to_trainer)
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
