"""Scenario 26, broken (out of memory): the model fills the card, and the workers' contexts do not fit.

    python -m scenarios run 26 --variant broken_oom     # needs a CUDA GPU

The training process holds all of the card's memory but 256 MiB (a model sized to the card);
each spawn worker's torch.cuda.set_device(0) must create a CUDA context of its own there.
Expected: the CUDA runtime's out-of-memory error, raised in a worker and re-raised under
"Caught … in DataLoader worker process N." (the exact words are what this run prints).
"""
import torch
from torch.utils.data import DataLoader, Dataset

from scenarios.host import cannot_run, cuda_problem_here

SAMPLES, WORKERS, MIB = 256, 4, 2**20


class Images(Dataset):
    def __init__(self):
        self.images = torch.rand(SAMPLES, 3, 64, 64)

    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        return self.images[index]


def pick_gpu(worker_id):
    torch.cuda.set_device(0)  # BUG: a context per worker, on a card the model has filled


def main():
    if problem := cuda_problem_here():
        cannot_run(problem)
    free, total = torch.cuda.mem_get_info()
    model_memory = torch.empty(free - 256 * MIB, dtype=torch.uint8, device="cuda")
    print(f"the model holds {model_memory.numel() / MIB:,.0f} MiB of the card's {total / MIB:,.0f} MiB", flush=True)
    loader = DataLoader(Images(), batch_size=32, num_workers=WORKERS, multiprocessing_context="spawn",
                        worker_init_fn=pick_gpu)
    print(f"read {sum(len(batch) for batch in loader)} samples")


if __name__ == "__main__":
    main()
