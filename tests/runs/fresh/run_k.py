"""Image-quality regressor with data-pipeline telemetry.

A small metrics client buffers counters (decoded samples, bad samples, bytes)
and ships them to the metrics gateway from a background thread. The dataset
reports through the same client. The loader timeout follows the team's CI
template.
"""
import threading
import time
from collections import Counter

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class MetricsClient:
    def __init__(self, flush_every=10.0):
        self.flush_every = flush_every
        self._lock = threading.Lock()
        self._buf = Counter()
        self.shipped = 0
        self._thread = threading.Thread(target=self._run, name="metrics-flush", daemon=True)
        self._thread.start()

    def incr(self, key, n=1):
        with self._lock:
            self._buf[key] += n

    def _ship(self, payload):
        time.sleep(3.0)  # POST to the gateway (slow on the shared runner)
        self.shipped += 1

    def _run(self):
        while True:
            with self._lock:
                payload = dict(self._buf)
                self._ship(payload)
                self._buf.clear()
            time.sleep(self.flush_every)


class QualityPatches(Dataset):
    def __init__(self, n, metrics):
        g = torch.Generator().manual_seed(0)
        self.x = torch.rand(n, 1, 16, 16, generator=g)
        self.y = self.x.mean(dim=(1, 2, 3), keepdim=False).unsqueeze(1)
        self.metrics = metrics

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        self.metrics.incr("samples_decoded")
        self.metrics.incr("bytes_read", self.x[i].numel() * 4)
        return self.x[i], self.y[i]


def main():
    metrics = MetricsClient()
    ds = QualityPatches(96, metrics)
    loader = DataLoader(ds, batch_size=16, shuffle=True, num_workers=2, timeout=20)
    model = nn.Sequential(nn.Flatten(), nn.Linear(256, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(2):
        print(f"epoch {epoch}: starting", flush=True)
        t0 = time.time()
        for step, (x, y) in enumerate(loader):
            loss = F.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch}: {step + 1} steps, loss {loss.item():.5f} ({time.time() - t0:.1f}s)", flush=True)
    print(f"metrics batches shipped: {metrics.shipped}")


if __name__ == "__main__":
    main()
