"""Receipt-photo orientation classifier (Lightning, CPU) with OpenCV augmentation in workers.

The workers run OpenCV single-threaded (cv2.setNumThreads(0) in worker_init_fn), so two
workers use two cores; the colour jitter goes through cv2.transform, not a numpy matmul.
"""
import os
import shutil
import tempfile

import cv2
import lightning as L
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

N_PHOTOS, N_ORIENT = 32, 4


def write_receipts(root):
    rng = np.random.default_rng(3)
    items = []
    for i in range(N_PHOTOS):
        paper = np.full((640, 400, 3), (225, 230, 235), np.uint8)
        for row in range(14):
            y = 40 + row * 40
            width = int(rng.integers(120, 340))
            cv2.rectangle(paper, (30, y), (30 + width, y + 14), (40, 40, 40), -1)
        orient = i % N_ORIENT
        photo = np.ascontiguousarray(np.rot90(paper, orient))
        photo = cv2.resize(photo, (480, 480))
        path = os.path.join(root, f"receipt_{i:03d}.jpg")
        cv2.imwrite(path, photo)
        items.append((path, orient))
    return items


def opencv_single_thread(worker_id):
    cv2.setNumThreads(0)


class Receipts(Dataset):
    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        path, orient = self.items[i]
        img = cv2.imread(path).astype(np.float32) / 255.0
        rng = np.random.default_rng()
        h, w = img.shape[:2]
        m = cv2.getRotationMatrix2D((w / 2, h / 2), rng.uniform(-5, 5), rng.uniform(0.9, 1.1))
        img = cv2.warpAffine(img, m, (w, h), borderMode=cv2.BORDER_REFLECT)
        img = cv2.GaussianBlur(img, (5, 5), rng.uniform(0.2, 1.0))
        jitter = (np.eye(3) + rng.normal(0, 0.04, (3, 3))).astype(np.float32)
        img = cv2.transform(img, jitter)
        img = cv2.resize(img, (224, 224), interpolation=cv2.INTER_AREA)
        return torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1))), orient


class OrientationNet(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 8, 5, stride=2), nn.ReLU(), nn.Conv2d(8, 16, 5, stride=2),
                                 nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(256, N_ORIENT))

    def training_step(self, batch, batch_idx):
        img, orient = batch
        loss = nn.functional.cross_entropy(self.net(img), orient)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def main():
    root = tempfile.mkdtemp(prefix="receipts_")
    try:
        items = write_receipts(root)
        loader = DataLoader(Receipts(items), batch_size=8, shuffle=True, num_workers=2,
                            worker_init_fn=opencv_single_thread)
        trainer = L.Trainer(accelerator="cpu", devices=1, max_epochs=3, logger=False,
                            enable_checkpointing=False, enable_progress_bar=False)
        trainer.fit(OrientationNet(), train_dataloaders=loader)
        print(f"done: {trainer.global_step} steps, loss {trainer.callback_metrics['train_loss']:.3f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
