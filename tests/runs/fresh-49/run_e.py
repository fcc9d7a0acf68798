"""Preemption drill for a TTS-style training loop with graceful SIGTERM checkpointing.

The trainer catches SIGTERM (what `scancel` or a Slurm time limit sends), finishes the step in
progress, writes a checkpoint for that step and exits 0. `python run_e.py` is the drill: it starts
the trainer in a session of its own (as Slurm starts a job step), waits for step 3, sends SIGTERM to
the job's process group as the scheduler does, and checks that the emergency checkpoint appears
within the grace period.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

GRACE_S = 10
stop_requested = False


def request_stop(signum, frame):
    global stop_requested
    stop_requested = True
    print(f"caught signal {signum}: will checkpoint at the end of this step", flush=True)


class Utterances(Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(0)
        self.text = torch.randint(0, 40, (256, 20), generator=g)
        self.frames = torch.randn(256, 20, 16, generator=g)

    def __len__(self):
        return 256

    def __getitem__(self, i):
        return i, self.text[i], self.frames[i]


def train(ckpt_dir):
    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGUSR1, request_stop)
    model = nn.Sequential(nn.Embedding(40, 32), nn.Linear(32, 16))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loader = DataLoader(Utterances(), batch_size=8, shuffle=False, num_workers=2)
    step = 0
    for ids, text, frames in loader:
        loss = nn.functional.l1_loss(model(text), frames)
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(0.3)  # the rest of a real step (vocoder, logging, ...)
        step += 1
        print(f"step {step}: loss {loss.item():.3f} samples {ids[0].item()}-{ids[-1].item()}", flush=True)
        if stop_requested:
            path = os.path.join(ckpt_dir, f"checkpoint_{step:08d}.pt")
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, path)
            print(f"emergency checkpoint written at step {step}", flush=True)
            return
    print("training finished", flush=True)


def drill():
    ckpt_dir = tempfile.mkdtemp(prefix="preempt-drill-")
    try:
        job = subprocess.Popen([sys.executable, __file__, "--train", ckpt_dir], stdout=subprocess.PIPE,
                               text=True, start_new_session=True)
        for line in job.stdout:
            print("job | " + line, end="", flush=True)
            if line.startswith("step 3:"):
                os.killpg(job.pid, signal.SIGTERM)  # scancel: every process of the job step
                print("drill | SIGTERM sent to the job's process group", flush=True)
                break
        t0 = time.time()
        try:
            rest, _ = job.communicate(timeout=GRACE_S)
            print("".join("job | " + ln + "\n" for ln in rest.splitlines()), end="")
        except subprocess.TimeoutExpired:
            os.killpg(job.pid, signal.SIGKILL)
            job.communicate()
        ckpts = sorted(os.listdir(ckpt_dir))
        print(f"drill | job exited with {job.returncode} {time.time() - t0:.1f} s after the signal; "
              f"checkpoints: {ckpts or 'none'}")
        if not ckpts:
            print("drill | FAILED: no emergency checkpoint was written")
    finally:
        shutil.rmtree(ckpt_dir, ignore_errors=True)


if __name__ == "__main__":
    if "--train" in sys.argv:
        train(sys.argv[sys.argv.index("--train") + 1])
    else:
        drill()
