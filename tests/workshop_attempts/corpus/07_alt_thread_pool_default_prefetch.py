"""Two workers with the default prefetch, and a __getitems__ that maps __getitem__ over a
multiprocessing.pool.ThreadPool kept by each worker: a batch's four requests go out together,
so a worker fetches a batch in about one latency (20 ms), and two workers with two batches
ready each outrun the model. Loading overlaps computing and a batch no longer costs four round
trips: a fix.
"""
import io
import sys
import urllib.request
from multiprocessing.pool import ThreadPool

import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from scenarios.remote_training import BATCH, OBJECTS, STEPS, UTILISATION_TARGET, remote_store, report, train


class RemoteImages(Dataset):
    def __init__(self, url):
        self.url = url
        self.pool = None  # made in the worker that first needs it: threads do not survive a fork

    def __len__(self):
        return BATCH * STEPS

    def __getitem__(self, index):
        with urllib.request.urlopen(f"{self.url}/{index % OBJECTS}.jpg") as response:
            image = Image.open(io.BytesIO(response.read())).convert("RGB")
        return torch.frombuffer(bytearray(image.tobytes()), dtype=torch.uint8).float().mean()

    def __getitems__(self, indices):  # the fetcher hands over a whole batch's indices
        if self.pool is None:
            self.pool = ThreadPool(BATCH)
        return self.pool.map(self.__getitem__, indices)


def main():
    with remote_store() as url:
        # Two workers fetch ahead; each sends a batch's requests together (__getitems__).
        loader = DataLoader(RemoteImages(url), batch_size=BATCH, num_workers=2)
        run = train(loader)
    report(run)
    if run["utilisation"] < UTILISATION_TARGET:
        sys.exit(f"the model waited for data {1 - run['utilisation']:.0%} of the time "
                 f"(target: busy at least {UTILISATION_TARGET:.0%}): data loading is the bottleneck")


if __name__ == "__main__":
    main()
