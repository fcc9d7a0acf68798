"""Scenario 26, broken (CUDA tensors returned): spawn workers hand the training process CUDA tensors.

    python -m scenarios run 26 --variant broken_return_cuda     # needs a CUDA GPU

A CUDA tensor made in a worker reaches the training process through CUDA's own sharing (see
torch's Note [Sharing CUDA tensors]): the worker must keep it alive as long as the training
process uses it.  Here the loop keeps its batches, the epoch ends and the workers exit: torch
warns "Producer process has been terminated before all shared CUDA tensors released".
"""
import torch
from torch.utils.data import DataLoader, Dataset

from scenarios.host import cannot_run, cuda_problem_here

SAMPLES = 256


class Features(Dataset):
    def __init__(self):
        self.rows = torch.randn(SAMPLES, 64)

    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        return self.rows[index].cuda()  # BUG: the worker makes the CUDA tensor the training process keeps


def main():
    if problem := cuda_problem_here():
        cannot_run(problem)
    torch.cuda.init()
    kept = [batch for batch in DataLoader(Features(), batch_size=32, num_workers=2, multiprocessing_context="spawn")]
    print(f"kept {len(kept)} batches on {kept[0].device} after the workers exited", flush=True)


if __name__ == "__main__":
    main()
