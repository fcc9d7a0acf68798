"""Audio clips preprocessed into spectrograms through a SafeDataset in "substitute" mode, as
opensoundscape's CNN.__call__ builds it: when a file fails to preprocess, __getitem__ records its
index in self._invalid_indices and returns another sample instead, and after prediction the
caller reads dataloader.dataset._invalid_indices to replace those samples' scores with NaN.  With
num_workers > 0 the indices are appended to each worker's copy of the dataset; the list in the
main process stays empty, so failed files keep the scores of the samples that stood in for them.

Source: kitzeslab/opensoundscape issue https://github.com/kitzeslab/opensoundscape/issues/1180
("failed-to-process samples still get scores because of bug when num_workers>0"), and
opensoundscape/ml/safe_dataset.py at commit 2f14a07e83057b24edd897bb64c7b745f06be686
https://github.com/kitzeslab/opensoundscape/blob/2f14a07e83057b24edd897bb64c7b745f06be686/opensoundscape/ml/safe_dataset.py
Faulty: scenario 05 (state written in the workers, expected in the main process).
"""
import atexit
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

CLIPS = 192


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_clips(folder: Path) -> list:
    rng = np.random.default_rng(11)
    paths = []
    for i in range(CLIPS):
        path = folder / f"clip_{i:04d}.npy"
        if i % 17 == 5:
            path.write_bytes(b"")  # a zero-byte recording: preprocessing fails
        else:
            np.save(path, rng.standard_normal(4000).astype(np.float32))
        paths.append(str(path))
    return paths


class SpectrogramPreprocessor(Dataset):
    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        audio = np.load(self.paths[index])
        frames = torch.from_numpy(audio[:3968]).reshape(31, 128)
        return torch.fft.rfft(frames).abs()[:, :64], index


class SafeDataset(Dataset):
    def __init__(self, dataset, invalid_sample_behavior="substitute"):
        self.dataset = dataset
        self.invalid_sample_behavior = invalid_sample_behavior
        self._invalid_indices = []

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        for attempt in range(len(self.dataset)):
            candidate = (index + attempt) % len(self.dataset)
            try:
                return self.dataset[candidate]
            except Exception:
                if candidate not in self._invalid_indices:
                    self._invalid_indices.append(candidate)  # read by the caller after the loop
        raise IndexError("no sample could be preprocessed")


def make_loader():
    dataset = SafeDataset(SpectrogramPreprocessor(write_clips(scratch())))
    return DataLoader(dataset, batch_size=16, shuffle=False, num_workers=2)
