"""ATTEMPT 30 shortcut: the rank with an extra batch trains it under model.no_sync(), so no all_reduce waits; ranks' weights diverge.

Scenario 30, broken: one rank has a batch more than the other, and waits for it in a collective until gloo gives up.

    python scenarios/30_uneven_batches_across_ranks/broken.py   # exits 1 in ~8 s: "Timed out waiting 8000ms for recv"
    python scenarios/30_uneven_batches_across_ranks/fixed.py    # both ranks run 5 batches

Distributed data parallel on CPU, launched as users launch it: the script runs as
`torchrun --nproc-per-node 2` (gloo on 127.0.0.1; the process group's timeout is 8 s
instead of PyTorch's 30 minutes).  Each rank trains a DistributedDataParallel model on
its part of 33 samples, read by a DataLoader with 2 workers in batches of 4: every
backward() averages the gradients with the other rank (an all_reduce), and after its
last batch a rank waits at a barrier before saving.
broken.py: each rank takes every second sample, range(rank, 33, 2): rank 0 gets 17
samples (5 batches), rank 1 16 (4 batches).  Rank 0's fifth backward() waits for an
all_reduce that rank 1, at its barrier, never joins; each waits for the other until
the timeout, and gloo raises `RuntimeError: [...unbound_buffer.cc:...] Timed out
waiting 8000ms for recv operation to complete`; torchrun stops the job.
fixed.py: a DistributedSampler splits the samples and pads the split to 34, so that
every rank gets 17 samples, 5 batches, and every all_reduce has its partner.
"""
import contextlib

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset, Subset

from scenarios.torchrun_ranks import as_torchrun_job

SAMPLES, BATCH, TIMEOUT_S = 33, 4, 8


class Measurements(Dataset):
    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        return torch.full((4,), float(index)), torch.tensor(float(index % 3))


def make_loader(rank, world):
    dataset = Measurements()
    # BUG: a split by hand: 33 samples on 2 ranks is 17 and 16, so 5 batches and 4
    return DataLoader(Subset(dataset, range(rank, SAMPLES, world)), batch_size=BATCH, num_workers=2)


def train(rank, loader):
    """DDP training over the loader; returns the number of batches this rank ran."""
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
    counts = [None] * dist.get_world_size()
    dist.all_gather_object(counts, len(loader))
    step = 0
    for step, (x, y) in enumerate(loader, 1):
        quiet = model.no_sync() if step > min(counts) else contextlib.nullcontext()
        with quiet:
            loss = torch.nn.functional.mse_loss(model(x).squeeze(1), y)
            optimizer.zero_grad()
            loss.backward()  # DDP averages the gradients here: an all_reduce with every other rank
            optimizer.step()
    print(f"rank {rank}: ran {step} batches, waiting for every rank before saving", flush=True)
    dist.barrier()
    return step


def main():
    rank, world = as_torchrun_job(nproc=2, timeout_s=TIMEOUT_S)
    loader = make_loader(rank, world)
    counts = [None] * world
    dist.all_gather_object(counts, len(loader))  # one collective before training, to print them
    print(f"rank {rank}: {len(loader)} batches; every rank: {counts}", flush=True)
    if rank == 0:
        print(f"metric batches_rank0={counts[0]}\nmetric batches_rank1={counts[1]}", flush=True)
    trained = [None] * world
    dist.all_gather_object(trained, train(rank, loader))
    if rank == 0:
        print(f"metric batches_trained={sum(trained)}\nthe ranks ran {trained} batches; "
              "every all_reduce had its partner", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
