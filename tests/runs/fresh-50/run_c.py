"""Sheet-music page classifier with OpenCV augmentation in the DataLoader workers.

Pages are photographed scans: each sample is read with cv2, rotated a little, blurred,
resized, and given a random white balance (a 3x3 colour matrix) before it becomes a tensor.
"""
import os
import shutil
import tempfile
import time

import cv2
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

N_PAGES, N_CLASSES = 40, 4  # classes: staff count per system (1-4)


def write_pages(root):
    rng = np.random.default_rng(0)
    paths = []
    for i in range(N_PAGES):
        label = i % N_CLASSES
        page = np.full((480, 640, 3), 235, np.uint8)
        for system in range(3):
            for staff in range(label + 1):
                top = 30 + system * 150 + staff * 36
                for line in range(5):
                    y = top + line * 6
                    cv2.line(page, (30, y), (610, y), (20, 20, 20), 1)
        page = np.clip(page + rng.normal(0, 6, page.shape), 0, 255).astype(np.uint8)
        path = os.path.join(root, f"page_{i:03d}_{label}.png")
        cv2.imwrite(path, page)
        paths.append((path, label))
    return paths


class ScorePages(Dataset):
    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        path, label = self.items[i]
        img = cv2.imread(path, cv2.IMREAD_COLOR).astype(np.float32) / 255.0
        rng = np.random.default_rng()
        h, w = img.shape[:2]
        rot = cv2.getRotationMatrix2D((w / 2, h / 2), rng.uniform(-3, 3), 1.0)
        img = cv2.warpAffine(img, rot, (w, h), borderMode=cv2.BORDER_REPLICATE)
        img = cv2.GaussianBlur(img, (5, 5), rng.uniform(0.3, 1.2))
        # random white balance: mix the colour channels with a 3x3 matrix
        balance = np.eye(3, dtype=np.float32) + rng.normal(0, 0.05, (3, 3)).astype(np.float32)
        img = (img.reshape(-1, 3) @ balance).reshape(h, w, 3)
        img = cv2.resize(img, (320, 240), interpolation=cv2.INTER_AREA)
        return torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1))), label


def make_model():
    return nn.Sequential(nn.Conv2d(3, 8, 5, stride=2), nn.ReLU(), nn.Conv2d(8, 16, 5, stride=2),
                         nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(256, N_CLASSES))


def main():
    root = tempfile.mkdtemp(prefix="score_pages_")
    try:
        items = write_pages(root)
        loader = DataLoader(ScorePages(items), batch_size=8, shuffle=True, num_workers=2)
        model = make_model()
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        for epoch in range(2):
            t0, total = time.perf_counter(), 0.0
            for img, label in loader:
                loss = nn.functional.cross_entropy(model(img), label)
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += loss.item()
            dt = time.perf_counter() - t0
            print(f"epoch {epoch}: loss {total / len(loader):.3f}, {len(items) / dt:.1f} pages/s",
                  flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
