"""Spoken-word clips of different lengths, one WAV file each, read per sample and batched by the
collate of PyTorch's speech-command tutorial: every waveform is zero-padded to the longest of
its batch with pad_sequence, the word turned into a class index.  (The tutorial reads the files
through torchaudio's SPEECHCOMMANDS; here the stdlib wave module reads them.)

Source: pytorch/tutorials, intermediate_source/speech_command_classification_with_torchaudio_tutorial.py
(pad_sequence, collate_fn, DataLoader(..., collate_fn=collate_fn, num_workers=...)),
commit 84c6357b6405aa921e11a19cbfed2b4c856eafbd
https://github.com/pytorch/tutorials/blob/84c6357b6405aa921e11a19cbfed2b4c856eafbd/intermediate_source/speech_command_classification_with_torchaudio_tutorial.py
Well built: no risk expected (samples of different lengths are padded in the collate).
"""
import atexit
import shutil
import tempfile
import wave
from pathlib import Path

import numpy as np
import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset

LABELS = ["yes", "no", "up", "down", "left", "right", "on", "off"]
RATE = 8_000


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_clips(root: Path, per_word: int = 32) -> Path:
    rng = np.random.default_rng(28)
    for word in LABELS:
        (root / word).mkdir()
        for i in range(per_word):
            samples = (rng.standard_normal(int(rng.integers(RATE // 2, RATE))) * 3_000).astype(np.int16)
            with wave.open(str(root / word / f"{i:08x}_nohash_0.wav"), "wb") as out:
                out.setnchannels(1)
                out.setsampwidth(2)
                out.setframerate(RATE)
                out.writeframes(samples.tobytes())
    return root


class SpeechCommandsLike(Dataset):
    def __init__(self, root: Path):
        self._walker = sorted(str(p) for p in root.glob("*/*.wav"))

    def __len__(self):
        return len(self._walker)

    def __getitem__(self, n):
        path = Path(self._walker[n])
        with wave.open(str(path)) as clip:
            frames = np.frombuffer(clip.readframes(clip.getnframes()), dtype=np.int16)
        waveform = torch.from_numpy(frames.astype(np.float32) / 32768.0).unsqueeze(0)  # (channel, time)
        return waveform, RATE, path.parent.name


def pad_batch(batch):
    batch = [item.t() for item in batch]
    return pad_sequence(batch, batch_first=True, padding_value=0.0).permute(0, 2, 1)


def collate_fn(batch):
    tensors, targets = [], []
    for waveform, _, label in batch:
        tensors.append(waveform)
        targets.append(torch.tensor(LABELS.index(label)))
    return pad_batch(tensors), torch.stack(targets)


def make_loader():
    return DataLoader(SpeechCommandsLike(write_clips(scratch())), batch_size=32, shuffle=True,
                      collate_fn=collate_fn, num_workers=2)
