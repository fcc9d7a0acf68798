# Source: pytorch/pytorch issue #142884 ("DataLoader hangs when object fails during pickling",
#   https://github.com/pytorch/pytorch/issues/142884, 2024): the reporter met it with a PIL.Image whose __getstate__
#   raised OSError while the worker's queue pickled the batch (Pillow's Image.__getstate__ calls self.tobytes(), which
#   loads the pixels); the pickling runs in the queue's feeder thread, which dies, and the main process waits forever.
# Kept: samples that are PIL images returned un-decoded (Image.open is lazy: only the header is read) and batched by a
#   collate_fn that keeps them as PIL objects for a processor in the main process; one image file cut short, so that
#   tobytes() raises OSError ("image file is truncated") only when the worker's queue pickles the batch; timeout=0.
# Changed: 40 synthetic 96x96 JPEGs with captions in a temp dir (removed at exit), the third one truncated to half its
#   bytes as by an interrupted copy; the image processor that would run on the batch is left out; batch_size 4,
#   shuffle=False, 2 workers.
# EXPECTED: 33 (a sample that cannot be pickled: the worker's feeder thread dies in _feed and the loop waits for a
#   batch that never comes)
import atexit
import os
import shutil
import tempfile

import numpy as np
from PIL import Image
from torch.utils.data import DataLoader, Dataset


def _write_images(count=40, side=96):
    root = tempfile.mkdtemp(prefix="fc-pil-lazy-")
    atexit.register(shutil.rmtree, root, True)
    rng = np.random.default_rng(142884)
    records = []
    for i in range(count):
        path = os.path.join(root, f"{i:05d}.jpg")
        Image.fromarray(rng.integers(0, 255, (side, side, 3), dtype=np.uint8)).save(path, quality=90)
        records.append((path, f"a photo number {i}"))
    broken = records[2][0]
    with open(broken, "rb") as f:
        data = f.read()
    with open(broken, "wb") as f:
        f.write(data[: len(data) // 2])
    return records


class ImageCaptionDataset(Dataset):
    def __init__(self, records):
        self.records = records

    def __len__(self):
        return len(self.records)

    def __getitem__(self, idx):
        path, caption = self.records[idx]
        image = Image.open(path)  # lazy: decoded by whoever touches the pixels first
        return image, caption


def collate_keep_pil(batch):
    images, captions = zip(*batch)
    return list(images), list(captions)


def make_loader():
    dataset = ImageCaptionDataset(_write_images())
    return DataLoader(dataset, batch_size=4, shuffle=False, num_workers=2, collate_fn=collate_keep_pil)
