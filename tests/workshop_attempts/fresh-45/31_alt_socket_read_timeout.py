"""ATTEMPT 31 alt: the storage read itself gets a deadline (socket timeout 4 s < 8 s): the stuck worker raises, and rank 1 reports it first.

Scenario 31, broken: one rank's loader stalls, and the other rank dies in a collective without a word about it.

    python scenarios/31_one_rank_loader_stalls/broken.py   # exits 1 in ~8 s: rank 0's "Timed out waiting 8000ms"
    python scenarios/31_one_rank_loader_stalls/fixed.py    # rank 1 says first: "DataLoader timed out after 4 seconds"

Distributed data parallel on CPU, launched as `torchrun --nproc-per-node 2` (gloo on
127.0.0.1, the process group's timeout 8 s instead of 30 minutes).  Each rank trains a
DistributedDataParallel model on its half of 32 samples, split by a DistributedSampler
(4 batches of 4 on each rank) and read by a DataLoader with 2 workers.  One sample,
13, is not in the cache and must come from remote storage that has stopped answering:
a socket whose other end the rank holds and never answers, so the worker's read waits
as one from a hung bucket or mount does, ending only with the job.  13 is rank 1's.
broken.py: rank 1 waits for its second batch with no end; rank 0 waits in that step's
all_reduce until gloo's timeout, `Timed out waiting 8000ms for recv operation to
complete`; torchrun stops rank 1 with SIGTERM, and nothing anywhere names its loader.
fixed.py: DataLoader(timeout=4), below the process group's 8 s: rank 1 raises
`RuntimeError: DataLoader timed out after 4 seconds` first, and torchrun's report
names rank 1 as the root cause; rank 0's error follows from it.
"""
import socket

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset, DistributedSampler

from scenarios.torchrun_ranks import as_torchrun_job

SAMPLES, BATCH, TIMEOUT_S, STALLED = 32, 4, 8, 13


class CachedSamples(Dataset):
    """32 samples of 4 values, cached in memory but for sample STALLED, which must be fetched from
    remote storage that has stopped answering: a socket whose other end this rank holds and never
    answers, so the read waits as one from a hung bucket or mount does, and ends with the job."""

    def __init__(self):
        self.storage_end, self.connection = socket.socketpair()

    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        if index == STALLED:
            self.connection.sendall(f"GET {index}\n".encode())
            self.connection.settimeout(4)  # a deadline on the read, below the process group's 8 s
            self.connection.recv(16)  # raises TimeoutError in the worker after 4 s
        return torch.full((4,), float(index)), torch.tensor(float(index % 3))


def make_loader(dataset, rank, world):
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=False)
    # BUG: timeout=0, the default: a batch that never comes is waited for forever
    return DataLoader(dataset, sampler=sampler, batch_size=BATCH, num_workers=2)


def main():
    rank, world = as_torchrun_job(nproc=2, timeout_s=TIMEOUT_S)
    loader = make_loader(CachedSamples(), rank, world)
    print(f"rank {rank}: {len(loader)} batches", flush=True)
    model = DistributedDataParallel(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
    for step, (x, y) in enumerate(loader, 1):
        loss = torch.nn.functional.mse_loss(model(x).squeeze(1), y)
        optimizer.zero_grad()
        loss.backward()  # DDP's all_reduce: every rank must reach it
        optimizer.step()
        print(f"rank {rank}: step {step} done", flush=True)
    if rank == 0:
        print(f"every rank trained its {step} batches", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
