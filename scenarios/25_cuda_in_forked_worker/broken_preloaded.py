"""Scenario 25, broken (preloaded): the dataset holds a tensor that torch.load put back on the GPU.

    python -m scenarios run 25 --variant broken_preloaded     # needs a CUDA GPU

The table was saved from the GPU; torch.load without map_location restores it there.  A forked
worker that indexes it fails with "CUDA error: initialization error" (torch.AcceleratorError from
torch 2.8, a RuntimeError before: the text is the same).  fixed.py's remedy holds: keep what the
dataset holds on the CPU (torch.load(path, map_location="cpu")).
"""
import tempfile
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset

from scenarios.host import cannot_run, cuda_problem_here

SAMPLES, FEATURES = 512, 256


class Table(Dataset):
    def __init__(self, path):
        self.rows = torch.load(path)  # BUG: no map_location: a tensor saved from the GPU comes back on it

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, index):
        return self.rows[index].cpu()


def main():
    if problem := cuda_problem_here():
        cannot_run(problem)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "table.pt"
        torch.save(torch.randn(SAMPLES, FEATURES, device="cuda"), path)  # made on the GPU, saved from it
        dataset = Table(path)
    print(f"the dataset's table is on {dataset.rows.device}")
    loader = DataLoader(dataset, batch_size=64, num_workers=2, multiprocessing_context="fork")
    seen = sum(len(batch) for batch in loader)
    print(f"read {seen} samples through 2 forked workers")


if __name__ == "__main__":
    main()
