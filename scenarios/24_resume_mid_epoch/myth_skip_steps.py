"""Scenario 24, myth check: "save the step count and skip that many batches when you resume".

    python scenarios/24_resume_mid_epoch/myth_skip_steps.py   # exits 1: right in epoch 0, wrong in epoch 1

broken.py with the common workaround in its strongest form: the run is seeded
(torch.manual_seed, so that a fresh process draws the same orders), and the resumed loop
throws away the batches the checkpoint says were trained in this epoch.  The job is run
twice: killed in epoch 0 (after step 7, checkpoint at step 5) and in epoch 1 (after step
17, checkpoint at step 15, as in broken.py).  In epoch 0 the skip lands where it should,
having loaded the skipped batches for nothing.  In epoch 1 it lands at the right step of
the wrong order: a fresh process's first iterator draws epoch 0's permutation again.
"""
import sys

import torch
from torch.utils.data import DataLoader

from _job import SAVE_EVERY, report, run_job
from broken import BATCH, EPOCHS, KILL_AFTER_STEP, SAMPLES, NumberedSamples

SEED = 0
STEPS = SAMPLES // BATCH
KILLED_IN = {"epoch_0": 7, "epoch_1": KILL_AFTER_STEP}


def train(job):
    torch.manual_seed(SEED)
    loader = DataLoader(NumberedSamples(), BATCH, shuffle=True, num_workers=2, multiprocessing_context="fork")
    state = job.resume() or {"epoch": 0, "step": 0, "trained_on": []}
    while state["epoch"] < EPOCHS:
        done = state["step"]  # steps of this epoch trained before the checkpoint: 0 unless resumed
        for i, batch in enumerate(loader):
            if i < done:  # MYTH: skipping the steps already done puts the loader back where it was
                continue
            job.train_step(state, batch["index"])
            state["step"] += 1
            if len(state["trained_on"]) % SAVE_EVERY == 0:
                job.save(state)
            if state["step"] == len(loader):
                break
        state["epoch"], state["step"] = state["epoch"] + 1, 0
    job.save(state)


def main():
    found = {}
    for name, kill_after_step in KILLED_IN.items():
        print(f"-- the job killed in {name.replace('_', ' ')}, after step {kill_after_step}")
        found[name] = report(run_job(train, kill_after_step), SAMPLES, STEPS)
        for figure, value in found[name].items():
            print(f"metric killed_in_{name}_{figure}={value}")
    early, late = found["epoch_0"], found["epoch_1"]
    print(f"killed in epoch 0: {early['samples_seen_twice']} samples twice and {early['samples_never_seen']} "
          f"never, after loading and throwing away {early['resumed_at_step']} batches")
    if late["samples_seen_twice"] or late["samples_never_seen"]:
        sys.exit(f"killed in epoch 1: skipping {late['resumed_at_step'] - STEPS} batches landed in epoch 0's "
                 f"order; {late['samples_seen_twice']} of {SAMPLES} samples trained on twice in epoch 1 and "
                 f"{late['samples_never_seen']} never")
    print(f"every one of {SAMPLES} samples trained on exactly once in each epoch, wherever the job was killed")


if __name__ == "__main__":
    main()
