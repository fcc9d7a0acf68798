"""Resume-reproducibility test for a DDP SFT worker (torchrun, 2 ranks, gloo on CPU).

Each rank reads its share through a shuffling DistributedSampler (seed 0, `set_epoch` at every new
epoch of the step loop). A resumed job rebuilds the loader with a skipping sampler that drops the
samples of the interrupted epoch already trained (train_step % steps_per_epoch batches), so it goes
on at the right position. `python run_k.py` runs the check with torchrun twice: launch 1 trains the
whole job and checkpoints at step 15 (epoch 1, step 3 of 12); launch 2 resumes from that checkpoint
in fresh processes. Then each rank's steps 16-24 are compared with launch 1's.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler, Sampler

N, BATCH, EPOCHS, CKPT_STEP = 96, 4, 2, 15
STEPS_PER_EPOCH = N // 2 // BATCH
TOTAL_STEPS = STEPS_PER_EPOCH * EPOCHS


class Instructions(Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(5)
        self.x = torch.randn(N, 24, generator=g)
        self.y = torch.randint(0, 4, (N,), generator=g)

    def __len__(self):
        return N

    def __getitem__(self, i):
        return i, self.x[i], self.y[i]


class SkippingSampler(Sampler):
    """Skips the first `skip` indices of the wrapped sampler once (resume within an epoch)."""

    def __init__(self, base, skip=0):
        self.base, self.skip = base, skip

    def __iter__(self):
        it = iter(self.base)
        for _ in range(self.skip):
            next(it)
        self.skip = 0
        return it

    def __len__(self):
        return len(self.base) - self.skip


def worker(mode, out_dir):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(24, 32), nn.ReLU(), nn.Linear(32, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    ds = Instructions()
    train_sampler = DistributedSampler(ds, shuffle=True, seed=0)
    train_step, bias = 0, 0
    ckpt = os.path.join(out_dir, f"ckpt_step{CKPT_STEP}_rank{rank}.pt")
    if mode == "resume":
        state = torch.load(ckpt, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        train_step = state["train_step"]
        bias = (train_step % STEPS_PER_EPOCH) * BATCH
        print(f"[rank{rank}] Resuming training from step {train_step}/{TOTAL_STEPS}", flush=True)
    epoch = train_step // STEPS_PER_EPOCH
    loader = DataLoader(ds, batch_size=BATCH, sampler=SkippingSampler(train_sampler, bias), num_workers=2)
    data_iter = iter(loader)
    log = {}
    while train_step < TOTAL_STEPS:
        try:
            ids, x, y = next(data_iter)
        except StopIteration:
            epoch += 1
            train_sampler.set_epoch(epoch)
            data_iter = iter(loader)
            ids, x, y = next(data_iter)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        train_step += 1
        log[train_step] = ids.tolist()
        if train_step == CKPT_STEP and mode == "train":
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "train_step": train_step}, ckpt)
    with open(os.path.join(out_dir, f"{mode}_rank{rank}.json"), "w") as f:
        json.dump(log, f)
    print(f"[rank{rank}] {mode}: finished at step {train_step}, last loss {loss.item():.3f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


def main():
    out_dir = tempfile.mkdtemp(prefix="ddp-resume-")
    try:
        for mode in ("train", "resume"):
            print(f"== torchrun {mode}", flush=True)
            subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                            __file__, "--mode", mode, out_dir], check=True)
        for rank in (0, 1):
            with open(os.path.join(out_dir, f"train_rank{rank}.json")) as f:
                full = {int(k): v for k, v in json.load(f).items()}
            with open(os.path.join(out_dir, f"resume_rank{rank}.json")) as f:
                resumed = {int(k): v for k, v in json.load(f).items()}
            same = sum(resumed[s] == full[s] for s in resumed)
            epoch1 = [i for s in range(13, 16) for i in full[s]] + [i for s in resumed for i in resumed[s]]
            counts = torch.bincount(torch.tensor(epoch1), minlength=N)
            expected = sorted(i for s in range(13, 25) for i in full[s])
            print(f"rank {rank}: {same} of {len(resumed)} resumed steps trained the batch of the uninterrupted run; "
                  f"epoch 1 across the resume: {int((counts > 1).sum())} samples twice, "
                  f"{len(set(expected) - set(epoch1))} of the rank's share never")
            print(f"rank {rank}: step 16 uninterrupted {full[16]}, resumed {resumed[16]}")
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


if __name__ == "__main__":
    if "--mode" in sys.argv:
        i = sys.argv.index("--mode")
        worker(sys.argv[i + 1], sys.argv[i + 2])
    else:
        main()
