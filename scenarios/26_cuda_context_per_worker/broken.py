"""Scenario 26, broken: every spawn worker picks the GPU and augments its samples there.

    make scenario-26        # needs a CUDA GPU; elsewhere it says so and exits 3

Spawn workers may use CUDA (scenario 25's error is fork's), and each one that does opens a
CUDA context of its own: hundreds of MiB of GPU memory per worker that the model cannot use.
Printed: how many workers hold a context (their open /dev/nvidia* files), the GPU memory
nvidia-smi gives each, and the card's memory taken while the workers live.
"""
import statistics

import torch
from torch.utils.data import DataLoader, Dataset

from scenarios.gpu_instruments import context_census
from scenarios.host import cannot_run, cuda_problem_here
from scenarios.instruments import worker_pids

SAMPLES, WORKERS, MIB = 1024, 4, 2**20


class Images(Dataset):
    def __init__(self):
        self.images = torch.rand(SAMPLES, 3, 64, 64, generator=torch.Generator().manual_seed(0))

    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        return augment(self.images[index][None].cuda())[0].cpu()  # BUG: a CUDA context in every worker


def pick_gpu(worker_id):
    torch.cuda.set_device(0)  # alone, this opens one too


def augment(batch):
    flipped = torch.where(torch.rand(len(batch), 1, 1, 1, device=batch.device) < 0.5, batch.flip(-1), batch)
    return (flipped - 0.5) / 0.25


def main():
    if problem := cuda_problem_here():
        cannot_run(problem)
    model = torch.nn.Conv2d(3, 8, 3).cuda()
    card_free_before = torch.cuda.mem_get_info()[0]
    loader = DataLoader(Images(), batch_size=32, num_workers=WORKERS, multiprocessing_context="spawn",
                        worker_init_fn=pick_gpu, pin_memory=True)
    batches = iter(loader)
    for step in range(len(loader)):
        batch = next(batches).to("cuda", non_blocking=True)
        model(batch).sum().backward()
        if step == 2 * WORKERS:  # every worker has delivered a batch: read them while they live
            holding, per_worker = context_census(worker_pids())
            card_taken = (card_free_before - torch.cuda.mem_get_info()[0]) / MIB
    print(f"metric workers_holding_cuda={holding}")
    print(f"metric card_mib_taken_while_workers_live={card_taken:.0f}")
    if per_worker:
        print(f"metric worker_cuda_mib={statistics.mean(per_worker):.0f}")
    each = f", {statistics.mean(per_worker):.0f} MiB each in nvidia-smi" if per_worker else ""
    if holding:
        raise SystemExit(f"{holding} of {WORKERS} workers hold a CUDA context{each}; the card lost "
                         f"{card_taken:.0f} MiB while they lived")
    print(f"no worker holds a CUDA context; the card lost {card_taken:.0f} MiB while they lived")


if __name__ == "__main__":
    main()
