"""Scenario 07, broken: images come from slow storage and the model waits for them.

    python scenarios/07_remote_storage_latency/broken.py

Expect: every step waits ~90 ms for 4 images from an object store with 20 ms
latency per request, then computes for ~40 ms: the model is busy about a
third of the time, and the script fails its 80 % utilisation check.
"""
import io
import sys
import time
import urllib.request

import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from scenarios.object_store import LatencyObjectStore
from scenarios.synthetic_data import jpeg_images

LATENCY_S, BATCH, STEPS, OBJECTS = 0.020, 4, 30, 64
UTILISATION_TARGET = 0.8
# BUG: no workers, so each batch is fetched while the model waits.
NUM_WORKERS, PREFETCH_FACTOR = 0, None
FETCH_S = BATCH * LATENCY_S  # a batch's requests go out one after another


class RemoteImages(Dataset):
    def __init__(self, url):
        self.url = url

    def __len__(self):
        return BATCH * STEPS

    def __getitem__(self, index):
        with urllib.request.urlopen(f"{self.url}/{index % OBJECTS}.jpg") as response:
            image = Image.open(io.BytesIO(response.read())).convert("RGB")
        return torch.frombuffer(bytearray(image.tobytes()), dtype=torch.uint8).float().mean()


def train_step(batch, weights):
    # Stands in for the GPU's forward and backward pass: a fixed amount of real work.
    for _ in range(20):
        weights = torch.tanh(weights @ weights)
    return weights.sum() + batch.sum()


def measure(num_workers, prefetch_factor):
    """Train for STEPS steps; return the time each step waited and computed."""
    torch.set_num_threads(1)
    weights = torch.randn(384, 384) / 20
    with LatencyObjectStore(jpeg_images(OBJECTS, size=48), LATENCY_S) as store:
        loader = DataLoader(RemoteImages(store.url), batch_size=BATCH, num_workers=num_workers,
                            prefetch_factor=prefetch_factor, multiprocessing_context="fork" if num_workers else None)
        timeline, mark = [], time.perf_counter()
        for batch in loader:
            fetched = time.perf_counter()
            train_step(batch, weights)
            timeline.append((fetched - mark, time.perf_counter() - fetched))
            mark = time.perf_counter()
    steady = timeline[1:]  # the first step also pays for starting the workers
    waited, computed = sum(w for w, _ in steady), sum(c for _, c in steady)
    compute_s = computed / len(steady)
    bound = min(num_workers / FETCH_S, 1 / compute_s) if num_workers else 1 / (FETCH_S + compute_s)
    return {"timeline": timeline, "throughput_per_s": len(steady) / (waited + computed),
            "bound_per_s": bound, "utilisation": computed / (waited + computed)}


def main():
    run = measure(NUM_WORKERS, PREFETCH_FACTOR)
    for step, (waited, computed) in enumerate(run["timeline"]):
        print(f"step {step:2d}: waited {1000 * waited:6.1f} ms, computed {1000 * computed:5.1f} ms")
    ratio = run["throughput_per_s"] / run["bound_per_s"]
    for name in ("throughput_per_s", "bound_per_s", "utilisation"):
        print(f"metric {name}={run[name]:.3f}")
    print(f"metric ratio_to_bound={ratio:.3f}")
    print(f"{run['throughput_per_s']:.1f} steps/s, {ratio:.0%} of the bound {run['bound_per_s']:.1f}/s "
          f"for {NUM_WORKERS} workers; the model computed {run['utilisation']:.0%} of the time")
    if run["utilisation"] < UTILISATION_TARGET:
        sys.exit(f"the model waited for data {1 - run['utilisation']:.0%} of the time "
                 f"(target: busy at least {UTILISATION_TARGET:.0%}): data loading is the bottleneck")


if __name__ == "__main__":
    main()
