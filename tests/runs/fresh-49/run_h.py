"""Data-resumption test for a streaming multimodal trainer (one process, 2 loader workers).

The training data is an IterableDataset over conversation records, split between the DataLoader
workers; a torchdata StatefulDataLoader reads it and its state_dict() goes into every checkpoint
(every 3 steps), loaded back before the loop on --resume. `python run_h.py` runs the test the way
our CI does: one uninterrupted job as reference, then a job preempted after its checkpoint at step 6,
resumed, preempted again after its checkpoint at step 9, and resumed to the end; it compares what the
preempted job trained on with the reference.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import torch
from torch import nn
from torch.utils.data import IterableDataset, get_worker_info
from torchdata.stateful_dataloader import StatefulDataLoader

N_RECORDS, BATCH, SAVE_EVERY = 96, 4, 3
TOTAL_STEPS = N_RECORDS // BATCH


class ConversationStream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        wid, nw = (info.id, info.num_workers) if info else (0, 1)
        for cur_idx in range(wid, self.n, nw):
            g = torch.Generator().manual_seed(cur_idx)
            yield {"record": cur_idx, "pixels": torch.rand(3, 8, 8, generator=g),
                   "tokens": torch.randint(0, 50, (12,), generator=g)}


class TinyVLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.vision = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.text = nn.Embedding(50, 8)
        self.head = nn.Linear(8, 50)

    def forward(self, pixels, tokens):
        h = self.text(tokens) + self.vision(pixels)[:, None, :]
        return self.head(h)


def train(ckpt_dir, resume, stop_after):
    loader = StatefulDataLoader(ConversationStream(N_RECORDS), batch_size=BATCH, num_workers=2)
    model = TinyVLM()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    path = os.path.join(ckpt_dir, "latest.pt")
    step, trained = 0, []
    if resume:
        ck = torch.load(path, weights_only=False)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        loader.load_state_dict(ck["dataloader"])
        step, trained = ck["step"], ck["trained"]
        print(f"resume from global_step {step}", flush=True)
    for batch in loader:
        logits = model(batch["pixels"], batch["tokens"])
        loss = nn.functional.cross_entropy(logits[:, :-1].reshape(-1, 50), batch["tokens"][:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        trained.append(batch["record"].tolist())
        print(f"global_step {step} loss {loss.item():.3f} records {batch['record'].tolist()}", flush=True)
        if step % SAVE_EVERY == 0:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "dataloader": loader.state_dict(),
                        "step": step, "trained": trained}, path + ".tmp")
            os.replace(path + ".tmp", path)
            if step == stop_after:
                print(f"saved checkpoint at step {step}; preempted", flush=True)
                os.killpg(os.getpgid(0), signal.SIGKILL)
    torch.save({"step": step, "trained": trained, "dataloader": loader.state_dict()}, path + ".final")
    print(f"epoch done at global_step {step}", flush=True)


def run(ckpt_dir, resume=False, stop_after=0):
    cmd = [sys.executable, __file__, "--train", ckpt_dir, str(stop_after)] + (["--resume"] if resume else [])
    subprocess.run(cmd, start_new_session=True)


def records(ckpt_dir):
    ck = torch.load(os.path.join(ckpt_dir, "latest.pt.final"), weights_only=False)
    return [r for b in ck["trained"] for r in b], ck["trained"]


def main():
    ref_dir, dir_ = tempfile.mkdtemp(prefix="ref-"), tempfile.mkdtemp(prefix="resumed-")
    try:
        print("== continuous job")
        train(ref_dir, resume=False, stop_after=0)
        print("== job preempted twice")
        run(dir_, stop_after=6)
        run(dir_, resume=True, stop_after=9)
        run(dir_, resume=True)
        ref, ref_steps = records(ref_dir)
        got, got_steps = records(dir_)
        counts = torch.bincount(torch.tensor(got), minlength=N_RECORDS)
        print(f"continuous: {len(ref_steps)} steps, {len(set(ref))} distinct records")
        print(f"preempted twice: {len(got_steps)} steps, {int((counts == 1).sum())} records once, "
              f"{int((counts > 1).sum())} twice or more, {int((counts == 0).sum())} never")
        missing = sorted(set(range(N_RECORDS)) - set(got))
        print(f"never trained after the second resume: {missing}")
    finally:
        shutil.rmtree(ref_dir, ignore_errors=True)
        shutil.rmtree(dir_, ignore_errors=True)


if __name__ == "__main__":
    if "--train" in sys.argv:
        i = sys.argv.index("--train")
        train(sys.argv[i + 1], "--resume" in sys.argv, int(sys.argv[i + 2]))
    else:
        main()
