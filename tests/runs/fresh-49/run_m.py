"""SFT trainer with a checkpoint manager that saves and restores the data loader's state.

Step-based loop: the data iterator is set up with the loader, then the checkpoint manager restores
model, optimizer and loader (`StatefulDataLoader.load_state_dict`) when resuming. `python run_m.py`
is the resume test: it runs the trainer, SIGKILLs it (and its loader workers) right after step 17,
relaunches it with --resume, and counts per epoch which packed samples were trained on.
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

SEQ, VOCAB, N, MICRO_BATCH, EPOCHS, CKPT_INTERVAL = 32, 128, 96, 8, 2, 5
STEPS_PER_EPOCH = N // MICRO_BATCH
MAX_STEPS = STEPS_PER_EPOCH * EPOCHS


class PackedSFT(Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(11)
        self.tokens = torch.randint(0, VOCAB, (N, SEQ + 1), generator=g)

    def __len__(self):
        return N

    def __getitem__(self, i):
        t = self.tokens[i]
        return {"sample_id": i, "input_ids": t[:-1], "labels": t[1:]}


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 48)
        self.mix = nn.GRU(48, 48, batch_first=True)
        self.head = nn.Linear(48, VOCAB)

    def forward(self, ids):
        h, _ = self.mix(self.emb(ids))
        return self.head(h)


class CheckpointManager:
    def __init__(self, folder):
        self.path = os.path.join(folder, "step_latest.pt")

    def save(self, step, model, optimizer, dataloader, progress):
        torch.save({"step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "dataloader": dataloader.state_dict(), "progress": progress}, self.path + ".partial")
        os.replace(self.path + ".partial", self.path)

    def load(self, model, optimizer, dataloader):
        state = torch.load(self.path, weights_only=False)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        dataloader.load_state_dict(state["dataloader"])
        return state["step"], state["progress"]


def setup_dataloader():
    return StatefulDataLoader(PackedSFT(), batch_size=MICRO_BATCH, shuffle=True, num_workers=2, drop_last=True)


def train(ckpt_dir, resume):
    model = TinyLM()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    dataloader = setup_dataloader()
    data_iter = iter(dataloader)
    ckpt = CheckpointManager(ckpt_dir)
    step, progress = 0, []
    if resume:
        step, progress = ckpt.load(model, optimizer, dataloader)
        print(f"Resuming from step {step}", flush=True)
    while step < MAX_STEPS:
        try:
            batch = next(data_iter)
        except StopIteration:
            data_iter = iter(dataloader)
            batch = next(data_iter)
        logits = model(batch["input_ids"])
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), batch["labels"].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        step += 1
        progress.append(((step - 1) // STEPS_PER_EPOCH, batch["sample_id"].tolist()))
        print(f"step {step} | loss {loss.item():.3f} | samples {batch['sample_id'][:4].tolist()}", flush=True)
        if step % CKPT_INTERVAL == 0 or step == MAX_STEPS:
            ckpt.save(step, model, optimizer, dataloader, progress)
    print("finished", flush=True)


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
    ckpt_dir = tempfile.mkdtemp(prefix="sft-ckpt-")
    try:
        print("launch 1 (killed after step 17):")
        launch(ckpt_dir, False, kill_after=17)
        print("launch 2 (--resume):")
        launch(ckpt_dir, True)
        state = torch.load(os.path.join(ckpt_dir, "step_latest.pt"), weights_only=False)
        for epoch in range(EPOCHS):
            counts = torch.zeros(N, dtype=torch.long)
            for e, ids in state["progress"]:
                if e == epoch:
                    counts[ids] += 1
            print(f"epoch {epoch}: {int((counts == 1).sum())} samples once, {int((counts > 1).sum())} twice or more, "
                  f"{int((counts == 0).sum())} never")
    finally:
        shutil.rmtree(ckpt_dir, ignore_errors=True)


if __name__ == "__main__":
    if "--train" in sys.argv:
        train(sys.argv[sys.argv.index("--train") + 1], "--resume" in sys.argv)
    else:
        main()
