"""ATTEMPT 33 partial: DataLoader(timeout=10): the lost batch ends the job with an error instead of a hang; the sample still holds the open file.

Scenario 33, broken: the loop waits for its first batch forever.

    python scenarios/33_unpicklable_sample_hangs/broken.py   # a pickling traceback per batch, then no end (Ctrl-C)
    python scenarios/33_unpicklable_sample_hangs/fixed.py    # eight batches in a few seconds

Each sample is returned with a handle on its caption, the open captions file
and where its line starts, so that the loop reads the caption only when it
logs one.  A worker hands every batch to a multiprocessing queue, whose feeder
thread pickles it; an open file does not pickle, so the feeder prints
`TypeError: cannot pickle '_io.BufferedReader' object`, drops the batch and
goes on.  The worker is alive and idle, PyTorch sees nothing wrong, and the
training process waits for that batch for ever (`timeout=0`, the default).
fixed.py reads the caption in __getitem__ and returns it as a str.
"""
import time

import torch
from torch.utils.data import DataLoader, Dataset

from _captions import CAPTIONS, CaptionHandle, line_offsets


class CaptionedImages(Dataset):
    def __init__(self, path):
        self.path, self.offsets, self.file = path, line_offsets(path), None

    def __len__(self):
        return len(self.offsets)

    def __getitem__(self, index):
        if self.file is None:  # opened in each worker, on first use (scenario 11)
            self.file = open(self.path, "rb")
        pixels = torch.full((3, 32, 32), float(index))
        # BUG: the sample holds an open file; the worker's queue must pickle it, and cannot.
        return pixels, index % 8, CaptionHandle(self.file, self.offsets[index])


def collate(samples):  # the tensors stacked, anything else kept as a list
    pixels, labels, captions = zip(*samples)
    return torch.stack(pixels), torch.tensor(labels), list(captions)


def main(timeout=0, num_workers=2, context=None):
    loader = DataLoader(CaptionedImages(CAPTIONS), batch_size=8, num_workers=num_workers,
                        collate_fn=collate, timeout=timeout, multiprocessing_context=context)
    print("training: waiting for the first batch", flush=True)
    started = time.perf_counter()
    for step, (pixels, labels, captions) in enumerate(loader):
        caption = captions[0].read()
        print(f"step {step} at {time.perf_counter() - started:.2f} s: {len(pixels)} images, "
              f"first is {caption!r}", flush=True)
    print(f"metric batches={step + 1}")
    print("epoch done")


if __name__ == "__main__":
    main(timeout=10)
