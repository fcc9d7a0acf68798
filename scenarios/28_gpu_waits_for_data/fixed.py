"""Scenario 28, fixed: workers decode, the loader pins, the next batch moves while the step runs.

    make scenario-28        # needs a CUDA GPU; elsewhere it says so and exits 3

Each sample is a JPEG photo decoded and augmented (a random crop resized, a flip, normalised),
as image pipelines do.  At the start a convolution stack is sized to take at least 6 ms a step
on this card, and the photos are sized so that a batch costs at least three steps to build in
one process (_photos.py): the figures, and the workers the fix needs, are said before training.
With num_workers=0 the training process builds one batch while the GPU runs the step before it,
then copies it from pageable memory: the GPU idles for the rest, whatever the card.  CUDA events
measure its busy share and the ratio to the bound (the step alone, its batch already on the GPU).
fixed.py decodes in that many workers, pins, and moves the next batch on a side stream while the
step runs: the GPU is fed, as "How to assign num_workers to PyTorch DataLoader" explains.
"""
import io
import random

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from _gpu_step import report, sized_model, train_epoch
from _photos import BATCH, OUT, plan
from fixes.cuda_prefetch import on_device
from scenarios.host import cannot_run, cuda_problem_here, usable_cores

BATCHES = 160
MEAN, STD = np.array([0.485, 0.456, 0.406], np.float32), np.array([0.229, 0.224, 0.225], np.float32)


class Photos(Dataset):
    """JPEG files, decoded and augmented sample by sample."""

    def __init__(self, files):
        self.files = files

    def __len__(self):
        return BATCHES * BATCH

    def __getitem__(self, index):
        draw = random.Random(index)
        image = Image.open(io.BytesIO(self.files[index % len(self.files)])).convert("RGB")
        crop = int(min(image.size) * draw.uniform(0.5, 1.0))
        left, top = draw.randint(0, image.width - crop), draw.randint(0, image.height - crop)
        image = image.resize((OUT, OUT), Image.Resampling.BILINEAR, box=(left, top, left + crop, top + crop))
        if draw.random() < 0.5:
            image = image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        pixels = (np.asarray(image, np.float32) / 255 - MEAN) / STD
        return torch.from_numpy(pixels.transpose(2, 0, 1).copy())


def main():
    if problem := cuda_problem_here():
        cannot_run(problem)
    model, optimizer, step_ms = sized_model()
    sized = plan(step_ms, Photos, usable_cores())
    if isinstance(sized, str):
        cannot_run(sized)
    loader = DataLoader(Photos(sized.files), batch_size=BATCH, num_workers=sized.workers,  # FIX: and on_device()
                        pin_memory=True)
    report(sized, *train_epoch(model, optimizer, on_device(loader)))


if __name__ == "__main__":
    main()
