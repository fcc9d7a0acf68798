"""Training examples streamed line by line from a log file: an IterableDataset."""
import tempfile
from pathlib import Path

import torch
from torch.utils.data import DataLoader, IterableDataset

LOG = Path(tempfile.gettempdir()) / "clinic-doctor-data" / "events.log"


class LogLines(IterableDataset):
    def __init__(self, path):
        self.path = path

    def __iter__(self):
        with open(self.path) as lines:
            for line in lines:
                user, item, rating = line.split(",")
                yield torch.tensor([int(user), int(item)]), float(rating)


def make_loader():
    if not LOG.exists():
        LOG.parent.mkdir(parents=True, exist_ok=True)
        partial = LOG.with_suffix(".part")
        partial.write_text("".join(f"{i % 97},{i % 31},{i % 5}.0\n" for i in range(4096)))
        partial.replace(LOG)
    return DataLoader(LogLines(LOG), batch_size=64, num_workers=2)
