"""Audio excerpts whose length the training loop changes as training goes on, by assigning the
dataset's attribute: `dataloader.dataset.duration = 2 * dataloader.dataset.duration` at a
chosen epoch (a curriculum over excerpt length).  The assignment reaches only the main
process's dataset; workers that outlive the epoch (persistent workers) keep cutting excerpts of
the old duration, and nothing reports it.

Source: descriptinc/audiotools pull request https://github.com/descriptinc/audiotools/pull/21
("Adding datasets": "That last line doesn't work ... All the other workers get a copy of the
original dataset, so manipulating the dataset attribute ... doesn't propagate to the other
workers"; the PR then shares marked attributes through a multiprocessing Manager).  This
rebuild is the dataset before that change, with the persistent workers of a long training run.
Faulty: scenario 14 (state set from the main process after persistent workers started: they keep
the copy of the first epoch; first labelled 05 when gathered, 14 is the scenario of that mechanism).
"""
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

SAMPLE_RATE = 8000


class AudioExcerpts(Dataset):
    def __init__(self, files: int = 24, seconds: float = 4.0, duration: float = 0.25, length: int = 256):
        rng = np.random.default_rng(4)
        self.signals = rng.standard_normal((files, int(seconds * SAMPLE_RATE))).astype(np.float32)
        self.duration = duration
        self.length = length

    def set_duration(self, duration: float) -> None:
        self.duration = duration

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        rng = np.random.default_rng(index)
        signal = self.signals[index % len(self.signals)]
        samples = int(self.duration * SAMPLE_RATE)
        offset = int(rng.integers(0, signal.shape[0] - samples))
        excerpt = torch.from_numpy(signal[offset:offset + samples])
        padded = torch.zeros(int(2.0 * SAMPLE_RATE))  # room for the longest excerpt of the curriculum
        padded[:samples] = excerpt
        return {"signal": padded, "samples": samples}


def make_loader():
    return DataLoader(AudioExcerpts(), batch_size=16, shuffle=True, num_workers=2, persistent_workers=True)
