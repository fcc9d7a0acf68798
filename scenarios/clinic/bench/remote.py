"""Bench part 3: remote storage (scenario 07's setting: the lab kit's scenarios/remote_training.py).

Small JPEGs behind scenarios/object_store.py's LatencyObjectStore (HTTP on 127.0.0.1, every
answer after LATENCY_S, as a cloud bucket), read by a training loop whose step computes for
real.  Throughput per loader configuration, against the best it can do: 1 / (fetch + compute)
steps/s without workers, where loading and computing take turns; min(workers / fetch,
1 / compute) with them.  The datasets are those of scenario 07's broken.py (a batch's requests
one after another) and fixed.py (a batch's requests together, `__getitems__`).
"""
from __future__ import annotations

import io
import urllib.request
import warnings
from concurrent.futures import ThreadPoolExecutor

import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from scenarios.remote_training import BATCH, OBJECTS, remote_store, train


class OneByOne(Dataset):
    """A sample per request: a batch's requests go one after another."""

    def __init__(self, url: str, steps: int):
        self.url, self.steps = url, steps

    def __len__(self):
        return BATCH * self.steps

    def __getitem__(self, index):
        with urllib.request.urlopen(f"{self.url}/{index % OBJECTS}.jpg") as response:
            image = Image.open(io.BytesIO(response.read())).convert("RGB")
        return torch.frombuffer(bytearray(image.tobytes()), dtype=torch.uint8).float().mean()


class Together(OneByOne):
    """A batch's requests in flight together: the DataLoader asks for a whole batch at once."""

    def __getitems__(self, indices):
        with ThreadPoolExecutor(len(indices)) as pool:  # waiting on the network needs no core
            return list(pool.map(self.__getitem__, indices))


def timed(loader) -> dict:
    """One epoch of the lab kit's timed loop: the steady throughput and the bound it is held to."""
    run = train(loader)
    return {"throughput_per_s": round(run["throughput_per_s"], 2), "bound_per_s": round(run["bound_per_s"], 2),
            "ratio": round(run["ratio_to_bound"], 3)}


def measure_remote(worker_counts, steps: int = 30) -> list[dict]:
    """A batch's requests one after another with 0..N workers (default prefetch), then
    scenario 07's fix: 2 workers, prefetch 4, a batch's requests together."""
    configs = [(f"{w} worker{'' if w == 1 else 's'}", OneByOne, {"num_workers": w}) for w in worker_counts]
    configs.append(("fixed.py: 2 workers, prefetch 4, a batch's requests together", Together,
                    {"num_workers": 2, "prefetch_factor": 4}))
    rows = []
    with remote_store() as url:
        for label, dataset_class, kwargs in configs:
            with warnings.catch_warnings():  # 4 workers on 2 cores: waiting on the network needs no core
                warnings.filterwarnings("ignore", "This DataLoader will create", UserWarning)
                rows.append({"config": label, **timed(DataLoader(dataset_class(url, steps), batch_size=BATCH,
                                                                 **kwargs))})
    return rows
