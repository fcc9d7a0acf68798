"""Scenario 14, broken: debugging with num_workers=0 while persistent_workers=True stays.

    python scenarios/14_persistent_workers_stale_epoch/broken_num_workers_0.py

The first thing to try when a loader misbehaves is `num_workers=0`, which runs
the dataset in the main process, where a debugger and print() work.  With
`persistent_workers=True` left in the loader's settings, as here where both
come from one config, the DataLoader refuses to be built: PyTorch's own
"ValueError: persistent_workers option needs num_workers > 0".  (Once it runs,
num_workers=0 does not show the stale epoch either: there is no worker copy.)
"""
from torch.utils.data import DataLoader

from broken import CurriculumDataset

CONFIG = {"batch_size": 16, "num_workers": 0, "persistent_workers": True}  # num_workers was 2


def main():
    dataset = CurriculumDataset()
    # BUG: persistent_workers needs workers; with num_workers=0 the loader is never built.
    loader = DataLoader(dataset, **CONFIG)
    print(f"{len(loader)} batches per epoch")


if __name__ == "__main__":
    main()
