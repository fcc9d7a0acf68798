"""A job whose workers grow now: they read a list of dicts (scenario 03's cause)."""
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Records(Dataset):
    def __init__(self):
        self.records = [{"id": i, "boxes": [[float(i), 1.0, 2.0, 3.0]], "name": f"img_{i}.jpg"}
                        for i in range(1_500_000)]

    def __len__(self):
        return len(self.records)

    def __getitem__(self, index):
        # Each sample reads a run of records (a crop's annotations, a text's neighbours): the
        # pages under them are copied into this worker as it reads.
        start = index * 50 % len(self.records)
        time.sleep(0.001)  # decoding
        return torch.tensor(sum(r["boxes"][0][0] for r in self.records[start:start + 50]))


if __name__ == "__main__":
    loader = DataLoader(Records(), batch_size=8, num_workers=2, multiprocessing_context="fork")
    print("started", flush=True)
    for batch in loader:
        pass
