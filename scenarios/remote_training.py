"""Lab kit: the slow store scenario 07 reads from, and the training loop it times.
Imported by scenario 07's scripts and by the bench's remote-storage part; not run on its own.

The store answers every request after LATENCY_S, like a cloud bucket seen from a
training node.  Each step records how long `next(loader)` blocked (waiting for
data), then runs `train_step`, a fixed amount of real compute standing in for
the accelerator's forward and backward pass.  The best a loader can do:
1 / (fetch + compute) steps/s without workers, where loading and computing take
turns; min(workers / fetch, 1 / compute) with them.
"""
import contextlib
import time

import torch

from scenarios.instruments import CpuWait
from scenarios.object_store import LatencyObjectStore
from scenarios.synthetic_data import jpeg_images

LATENCY_S, BATCH, STEPS, OBJECTS = 0.020, 4, 30, 64
UTILISATION_TARGET = 0.8  # the share of each step the model should spend computing


@contextlib.contextmanager
def remote_store():
    """The URL of an object store on 127.0.0.1 holding OBJECTS small JPEGs."""
    with LatencyObjectStore(jpeg_images(OBJECTS, size=48), LATENCY_S) as store:
        yield store.url


def train_step(batch, weights):
    for _ in range(20):
        weights = torch.tanh(weights @ weights)
    return weights.sum() + batch.sum()


def fetch_s(dataset) -> float:
    """The least time one batch can take to fetch: its requests one after another,
    or, for a dataset with `__getitems__` that sends them together, one latency."""
    return LATENCY_S if callable(getattr(dataset, "__getitems__", None)) else BATCH * LATENCY_S


def train(loader) -> dict:
    """One epoch of STEPS steps: each step's (waited, computed) seconds, the
    throughput of the steady state, and the bound it is held to."""
    torch.set_num_threads(1)
    weights = torch.randn(384, 384) / 20
    timeline, mark, waits, cpu_wait = [], time.perf_counter(), CpuWait(), 0.0
    for batch in loader:
        fetched = time.perf_counter()
        train_step(batch, weights)
        timeline.append((fetched - mark, time.perf_counter() - fetched))
        # Read while the workers live (they go with the epoch's last batch); from the first
        # step on, as the throughput is.
        if len(timeline) == 1:
            waits.start()
        else:
            cpu_wait = waits.share()
        mark = time.perf_counter()
    steady = timeline[1:]  # the first step also pays for starting the workers
    waited, computed = sum(w for w, _ in steady), sum(c for _, c in steady)
    compute_s, fetch = computed / len(steady), fetch_s(loader.dataset)
    workers = loader.num_workers
    bound = min(workers / fetch, 1 / compute_s) if workers else 1 / (fetch + compute_s)
    throughput = len(steady) / (waited + computed)
    return {"timeline": timeline, "workers": workers, "throughput_per_s": throughput,
            "bound_per_s": bound, "ratio_to_bound": throughput / bound,
            "utilisation": computed / (waited + computed), "cpu_wait_share": cpu_wait}


def report(run) -> None:
    """Print each step, the figures the runner reads, and a one-line summary."""
    for step, (waited, computed) in enumerate(run["timeline"]):
        print(f"step {step:2d}: waited {1000 * waited:6.1f} ms, computed {1000 * computed:5.1f} ms")
    for name in ("throughput_per_s", "bound_per_s", "ratio_to_bound", "utilisation", "cpu_wait_share"):
        print(f"metric {name}={run[name]:.3f}")
    print(f"{run['throughput_per_s']:.1f} steps/s, {run['ratio_to_bound']:.0%} of the bound "
          f"{run['bound_per_s']:.1f}/s for {run['workers']} workers; "
          f"the model computed {run['utilisation']:.0%} of the time")
