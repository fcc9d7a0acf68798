"""Resume test for a small vocoder-style training job (plain PyTorch).

The job trains a 1-D conv net on synthetic mel frames, checkpoints every 5 steps and can be
relaunched with --resume. `python run_c.py` plays the cluster: it launches the job, kills it
(SIGKILL to its process group, as a preempted node) right after step 17, relaunches it with
--resume, and then checks from the final checkpoint what the job trained on.
"""
import os
import signal
import subprocess
import sys
import tempfile
import shutil

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

N_CLIPS, BATCH, EPOCHS, SAVE_EVERY = 96, 8, 2, 5
STEPS_PER_EPOCH = N_CLIPS // BATCH
TOTAL_STEPS = STEPS_PER_EPOCH * EPOCHS


class MelClips(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(7)
        self.mels = torch.randn(n, 16, 40, generator=g)
        self.wave_targets = torch.randn(n, 40, generator=g)

    def __len__(self):
        return len(self.mels)

    def __getitem__(self, i):
        return i, self.mels[i], self.wave_targets[i]


class TinyVocoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(16, 32, 3, padding=1), nn.GELU(), nn.Conv1d(32, 1, 3, padding=1))

    def forward(self, mel):
        return self.net(mel).squeeze(1)


def train(ckpt_dir, resume):
    torch.manual_seed(1234)  # fixed seed for reproducible runs
    ds = MelClips(N_CLIPS)
    loader = DataLoader(ds, batch_size=BATCH, shuffle=True, num_workers=2, drop_last=True)
    model = TinyVocoder()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    step, seen = 0, []
    path = os.path.join(ckpt_dir, "last.pt")
    if resume and os.path.exists(path):
        ck = torch.load(path, weights_only=False)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        step, seen = ck["step"], ck["seen"]
        print(f"resumed from step {step} (epoch {step // STEPS_PER_EPOCH}, "
              f"step {step % STEPS_PER_EPOCH} of {STEPS_PER_EPOCH})", flush=True)
    start_epoch = step // STEPS_PER_EPOCH
    skip = step % STEPS_PER_EPOCH
    for epoch in range(start_epoch, EPOCHS):
        for i, (idx, mel, target) in enumerate(loader):
            if epoch == start_epoch and i >= STEPS_PER_EPOCH - skip:
                break  # the rest of the interrupted epoch only
            loss = nn.functional.mse_loss(model(mel), target)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            seen.append((epoch, idx.tolist()))
            print(f"step {step} epoch {epoch} loss {loss.item():.4f} first ids {idx[:4].tolist()}", flush=True)
            if step % SAVE_EVERY == 0 or step == TOTAL_STEPS:
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step, "seen": seen},
                           path + ".tmp")
                os.replace(path + ".tmp", path)
        skip = 0
    print("training finished", flush=True)


def launch(ckpt_dir, resume, kill_after=None):
    cmd = [sys.executable, __file__, "--train", ckpt_dir] + (["--resume"] if resume else [])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, start_new_session=True)
    lines = []
    for line in proc.stdout:
        print("  | " + line, end="")
        lines.append(line)
        if kill_after is not None and line.startswith(f"step {kill_after} "):
            os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.wait()
    proc.stdout.close()
    return lines


def main():
    ckpt_dir = tempfile.mkdtemp(prefix="vocoder-ckpt-")
    try:
        print("attempt 1 (killed after step 17):")
        first = launch(ckpt_dir, resume=False, kill_after=17)
        print("attempt 2 (--resume):")
        launch(ckpt_dir, resume=True)
        ck = torch.load(os.path.join(ckpt_dir, "last.pt"), weights_only=False)
        for epoch in range(EPOCHS):
            counts = torch.zeros(N_CLIPS, dtype=torch.long)
            for e, ids in ck["seen"]:
                if e == epoch:
                    counts[ids] += 1
            print(f"epoch {epoch}: {int((counts == 1).sum())} clips once, {int((counts > 1).sum())} twice or more, "
                  f"{int((counts == 0).sum())} never")
        lost = [ln.split("first ids ")[1].strip() for ln in first if ln.startswith(("step 16 ", "step 17 "))]
        print(f"steps 16-17 in attempt 1 trained on {lost}; total steps in checkpoint: {ck['step']}")
    finally:
        shutil.rmtree(ckpt_dir, ignore_errors=True)


if __name__ == "__main__":
    if "--train" in sys.argv:
        train(sys.argv[sys.argv.index("--train") + 1], "--resume" in sys.argv)
    else:
        main()
