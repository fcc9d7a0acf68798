"""Scenario 25, broken: the dataset puts each sample on the GPU, and the workers fork.

    make scenario-25        # needs a CUDA GPU; elsewhere it says so and exits 3

The training process uses CUDA (its model is on the GPU) before the DataLoader forks its
workers.  A worker's first CUDA call fails: "Cannot re-initialize CUDA in forked subprocess",
under "Caught RuntimeError in DataLoader worker process 0.".  fixed.py keeps the dataset on
the CPU and moves each batch to the GPU in the loop.
"""
import torch
from torch.utils.data import DataLoader, Dataset

from scenarios.host import cannot_run, cuda_problem_here

SAMPLES, FEATURES = 512, 256


class Features(Dataset):
    def __init__(self):
        self.rows = torch.randn(SAMPLES, FEATURES, generator=torch.Generator().manual_seed(0))

    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        return self.rows[index].to("cuda")  # BUG: CUDA in a worker forked from a process that has used it


def main():
    if problem := cuda_problem_here():
        cannot_run(problem)
    model = torch.nn.Linear(FEATURES, 10).cuda()  # the training process uses CUDA before the fork
    loader = DataLoader(Features(), batch_size=64, num_workers=2, multiprocessing_context="fork")
    seen = 0
    for batch in loader:
        batch = batch.to("cuda")
        model(batch).sum().backward()
        seen += len(batch)
    torch.cuda.synchronize()
    print(f"trained on {seen} samples on {torch.cuda.get_device_name()}, batches from 2 forked workers")


if __name__ == "__main__":
    main()
