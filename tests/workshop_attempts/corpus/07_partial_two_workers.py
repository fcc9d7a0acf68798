"""Two workers with the defaults: the fetching overlaps the model now, but each batch still takes
four round trips one after another, and two workers cannot keep up. Half a fix.
"""
import io
import sys
import urllib.request

import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from scenarios.remote_training import BATCH, OBJECTS, STEPS, UTILISATION_TARGET, remote_store, report, train


class RemoteImages(Dataset):
    def __init__(self, url):
        self.url = url

    def __len__(self):
        return BATCH * STEPS

    def __getitem__(self, index):
        with urllib.request.urlopen(f"{self.url}/{index % OBJECTS}.jpg") as response:
            image = Image.open(io.BytesIO(response.read())).convert("RGB")
        return torch.frombuffer(bytearray(image.tobytes()), dtype=torch.uint8).float().mean()


def main():
    with remote_store() as url:
        # BUG: no workers: the model waits while each batch is fetched, request after request.
        loader = DataLoader(RemoteImages(url), batch_size=BATCH, num_workers=2)
        run = train(loader)
    report(run)
    if run["utilisation"] < UTILISATION_TARGET:
        sys.exit(f"the model waited for data {1 - run['utilisation']:.0%} of the time "
                 f"(target: busy at least {UTILISATION_TARGET:.0%}): data loading is the bottleneck")


if __name__ == "__main__":
    main()
