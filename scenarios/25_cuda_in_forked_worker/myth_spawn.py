"""Scenario 25, myth: "use the 'spawn' start method, as the message says".

    python -m scenarios run 25 --variant myth_spawn     # needs a CUDA GPU

broken.py's dataset, with multiprocessing_context="spawn": it runs, and each of the 4 workers
opens a CUDA context of its own.  Printed: how many workers hold one (their open /dev/nvidia*
files) and the GPU memory nvidia-smi gives each (scenario 26 is about that cost).
"""
import statistics

import torch
from torch.utils.data import DataLoader, Dataset

from scenarios.gpu_instruments import context_census
from scenarios.host import cannot_run, cuda_problem_here
from scenarios.instruments import worker_pids

SAMPLES, FEATURES, WORKERS = 512, 256, 4


class Features(Dataset):
    def __init__(self):
        self.rows = torch.randn(SAMPLES, FEATURES, generator=torch.Generator().manual_seed(0))

    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        return self.rows[index].to("cuda").cpu()


def main():
    if problem := cuda_problem_here():
        cannot_run(problem)
    model = torch.nn.Linear(FEATURES, 10).cuda()
    # MYTH: spawn makes CUDA in the workers legal, and makes each worker pay for a CUDA context
    loader = DataLoader(Features(), batch_size=16, num_workers=WORKERS, multiprocessing_context="spawn")
    batches = iter(loader)
    for step in range(2 * WORKERS):  # every worker has delivered a batch
        model(next(batches).to("cuda")).sum().backward()
    workers = worker_pids()  # this process's workers, not multiprocessing's resource tracker
    holding, per_worker = context_census(workers)
    print(f"metric workers_holding_cuda={holding}")
    if per_worker:
        print(f"metric worker_cuda_mib={statistics.mean(per_worker):.0f}")
        print(f"metric workers_cuda_mib_total={sum(per_worker):.0f}")
    del batches
    print(f"spawn ran: {holding} of {WORKERS} workers hold a CUDA context"
          + (f", {statistics.mean(per_worker):.0f} MiB of GPU memory each" if per_worker else
             " (nvidia-smi lists no worker pid here: another pid namespace)"))


if __name__ == "__main__":
    main()
