"""A training script that reports liveness from a background thread, started before the
loader (a common pattern for job schedulers and dashboards); its dataset holds no lock."""
import threading
import time

import torch
from torch.utils.data import DataLoader, TensorDataset


def _beat(every_s: float = 0.5):
    while True:
        print(f"alive at {time.time():.0f}", flush=False)
        time.sleep(every_s)


def make_loader():
    threading.Thread(target=_beat, name="heartbeat", daemon=True).start()
    features = torch.randn(512, 16)
    return DataLoader(TensorDataset(features, features.sum(1)), batch_size=64, num_workers=2,
                      multiprocessing_context="fork")
