"""An Accelerate training script as users write one, launched on 2 CPU processes: a stream prepared by
Accelerate (which hands each process its share of the batches) and read by 2 DataLoader workers per
process, its IterableDataset never asking which worker it runs in: each worker yields every record (13).

    accelerate launch --cpu --num_processes 2 tests/runs/accelerate_stream.py [--split]
    python -m scenarios doctor -- accelerate launch --cpu --num_processes 2 tests/runs/accelerate_stream.py
"""
import sys

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

SPLIT = "--split" in sys.argv


class Records(IterableDataset):
    def __iter__(self):
        info = get_worker_info()
        start, step = (info.id, info.num_workers) if SPLIT and info else (0, 1)
        for i in range(start, 256, step):
            yield torch.full((8,), float(i)), torch.tensor(i % 2)


def main():
    accelerator = Accelerator(cpu=True)
    model = torch.nn.Linear(8, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Records(), batch_size=16, num_workers=2)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for epoch in range(2):
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
    accelerator.print("done")


if __name__ == "__main__":
    main()
