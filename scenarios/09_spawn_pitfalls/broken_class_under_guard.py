"""Scenario 09, broken_class_under_guard: the Dataset class defined under the main guard.

    python scenarios/09_spawn_pitfalls/broken_class_under_guard.py

Expect, from the spawned worker:
    AttributeError: Can't get attribute 'SquaresDataset' on <module '__mp_main__' from '…'>
and then in the main process:
    RuntimeError: DataLoader worker (pid(s) …) exited unexpectedly
The fix is the layout of fixed_main_guard.py: classes at the top level, work under the guard.
"""
import torch
from torch.utils.data import DataLoader, Dataset

if __name__ == "__main__":
    # BUG: the class exists only when this file runs as __main__; a spawned worker
    # imports it as __mp_main__, skips this block, and cannot find the class.
    class SquaresDataset(Dataset):
        def __len__(self):
            return 256

        def __getitem__(self, index):
            return torch.tensor([float(index * index)])

    loader = DataLoader(SquaresDataset(), batch_size=32, num_workers=1,
                        multiprocessing_context="spawn")
    total = sum(batch.sum().item() for batch in loader)
    print(f"sum of squares: {total:.0f}")
