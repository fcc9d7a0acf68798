"""ATTEMPT 40 alt: workers ignore SIGTERM/SIGINT, and after the checkpoint the loop ends its iterator itself and SIGKILLs any worker still alive.

Kind: alt.  The README's cost of the fix: PyTorch's terminate() fallback no longer works on a
worker that ignores SIGTERM.  So this attendee leaves the loop with `break`, drops the iterator
(its shutdown ends the workers the normal way) and kills what multiprocessing still lists.
"""
import multiprocessing
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


def ignore_job_signals(worker_id):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def request_stop(signum, frame):
    global stop_requested
    stop_requested = True  # the step in progress finishes; the loop below checkpoints and leaves


def train(checkpoint_path):
    signal.signal(signal.SIGTERM, request_stop)
    loader = DataLoader(NumberedSamples(), BATCH, num_workers=WORKERS, multiprocessing_context="fork",
                        worker_init_fn=ignore_job_signals)
    batches = iter(loader)
    trained_on = []  # one list of sample indices per step: the model's state, saved as weights are
    for step, batch in enumerate(batches):
        time.sleep(STEP_S)
        trained_on.append(batch["index"].tolist())
        if stop_requested:
            torch.save({"trained_on": trained_on}, checkpoint_path)
            print(f"emergency checkpoint written at step {step}", flush=True)
            break
        print(f"step {step}: trained on samples {trained_on[-1][0]}-{trained_on[-1][-1]}", flush=True)
    else:
        torch.save({"trained_on": trained_on}, checkpoint_path)
    del batches  # the iterator's shutdown: _workers_done_event and a None on each index queue
    for worker in multiprocessing.active_children():  # one stuck in a read would ignore terminate(): kill it
        worker.join(timeout=2)
        if worker.is_alive():
            worker.kill()


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
