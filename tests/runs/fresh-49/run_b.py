"""Preemption test for a step-based fine-tuning loop with a resumable data loader.

The trainer uses torchdata's StatefulDataLoader and puts `loader.state_dict()` in every checkpoint;
a relaunched job loads the checkpoint (loader state included) before it takes its data iterator.
`python run_b.py` launches the job, SIGKILLs its process group right after step 17 (a checkpoint is
written every 5 steps), relaunches it with --resume and counts, from the final checkpoint, which
samples each epoch trained on.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import torch
from torch import nn
from torch.utils.data import Dataset
from torchdata.stateful_dataloader import StatefulDataLoader

N, BATCH, EPOCHS, SAVE_EVERY = 96, 8, 2, 5
STEPS_PER_EPOCH = N // BATCH
TOTAL = STEPS_PER_EPOCH * EPOCHS


class Reviews(Dataset):
    """Bag-of-words review features with a sentiment label."""

    def __init__(self):
        g = torch.Generator().manual_seed(3)
        self.x = torch.rand(N, 64, generator=g)
        self.y = (self.x[:, :32].sum(1) > self.x[:, 32:].sum(1)).long()

    def __len__(self):
        return N

    def __getitem__(self, i):
        return {"idx": i, "x": self.x[i], "y": self.y[i]}


def train(ckpt_dir, resume):
    loader = StatefulDataLoader(Reviews(), batch_size=BATCH, shuffle=True, num_workers=2, drop_last=True)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    path = os.path.join(ckpt_dir, "ckpt.pt")
    step, seen = 0, []
    if resume:
        state = torch.load(path, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        loader.load_state_dict(state["loader"])
        step, seen = state["step"], state["seen"]
        print(f"resumed at step {step}", flush=True)
    data_iter = iter(loader)  # taken after the loader state is restored
    while step < TOTAL:
        try:
            batch = next(data_iter)
        except StopIteration:
            data_iter = iter(loader)
            batch = next(data_iter)
        loss = nn.functional.cross_entropy(model(batch["x"]), batch["y"])
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        seen.append(((step - 1) // STEPS_PER_EPOCH, batch["idx"].tolist()))
        print(f"step {step} loss {loss.item():.3f} ids {batch['idx'][:4].tolist()}", flush=True)
        if step % SAVE_EVERY == 0 or step == TOTAL:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "loader": loader.state_dict(),
                        "step": step, "seen": seen}, path + ".tmp")
            os.replace(path + ".tmp", path)
    print("done", flush=True)


def launch(ckpt_dir, resume, kill_after=None):
    cmd = [sys.executable, __file__, "--train", ckpt_dir] + (["--resume"] if resume else [])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, start_new_session=True)
    out = []
    for line in proc.stdout:
        print("  | " + line, end="")
        out.append(line)
        if kill_after is not None and line.startswith(f"step {kill_after} "):
            os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.wait()
    proc.stdout.close()
    return out


def main():
    ckpt_dir = tempfile.mkdtemp(prefix="ft-resume-")
    try:
        print("run 1, preempted after step 17:")
        first = launch(ckpt_dir, False, kill_after=17)
        print("run 2, --resume:")
        second = launch(ckpt_dir, True)
        state = torch.load(os.path.join(ckpt_dir, "ckpt.pt"), weights_only=False)
        for epoch in range(EPOCHS):
            counts = torch.zeros(N, dtype=torch.long)
            for e, ids in state["seen"]:
                if e == epoch:
                    counts[ids] += 1
            print(f"epoch {epoch}: {int((counts == 1).sum())} once, {int((counts > 1).sum())} twice or more, "
                  f"{int((counts == 0).sum())} never")
        for s in (16, 17):
            a = [ln.split("ids ")[1].strip() for ln in first if ln.startswith(f"step {s} ")]
            b = [ln.split("ids ")[1].strip() for ln in second if ln.startswith(f"step {s} ")]
            print(f"step {s}: run 1 {a[0] if a else '-'}, run 2 {b[0] if b else '-'}")
    finally:
        shutil.rmtree(ckpt_dir, ignore_errors=True)


if __name__ == "__main__":
    if "--train" in sys.argv:
        train(sys.argv[sys.argv.index("--train") + 1], "--resume" in sys.argv)
    else:
        main()
