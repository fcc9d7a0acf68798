"""A busy healthy job: workers that compute every sample (CPU-bound), one thread each, and a training
step that keeps nothing and costs several times what a batch costs to load: every core in use, the
loop never short of a batch, nothing wrong.  (A loop that does nothing with its batches waits for
every one of them: that job is loading-bound, scenario 07's finding, not a healthy one.)"""
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Spectra(Dataset):
    def __init__(self):
        self.signals = np.random.default_rng(0).random((2048, 4096), dtype=np.float32)

    def __len__(self):
        return len(self.signals)

    def __getitem__(self, index):
        return torch.from_numpy(np.abs(np.fft.rfft(self.signals[index])).astype(np.float32))


if __name__ == "__main__":
    torch.set_num_threads(1)
    loader = DataLoader(Spectra(), batch_size=32, num_workers=2, multiprocessing_context="fork",
                        persistent_workers=True)
    weights = torch.randn(2049, 2049) / 2049 ** 0.5  # the model: a few dense layers on one thread
    print("started", flush=True)
    while True:
        for batch in loader:
            for _ in range(4):
                batch = torch.tanh(batch @ weights)
