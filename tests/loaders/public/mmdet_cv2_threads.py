"""Detection images loaded and augmented with OpenCV in every worker, as mmdetection 2.x's
pipeline did before its "single line" fix: LoadImageFromFile decodes with cv2.imdecode,
Resize rescales to the config's scale with cv2.resize, Normalize works in place with
cv2.subtract / cv2.multiply, Pad fills to a multiple of 32.  Nothing limits OpenCV's own
thread pool, so every worker runs one sized for all the machine's cores
(open-mmlab/mmdetection#6867 counted about 2000 threads on a 64-core server; the fix added
cv2.setNumThreads(0) to tools/train.py, later setup_multi_processes).

Source: open-mmlab/mmdetection, mmdet/datasets/pipelines/loading.py and
mmdet/datasets/pipelines/transforms.py (LoadImageFromFile, Resize, Normalize, Pad) and
tools/train.py, release v2.19.0 (before the fix)
https://github.com/open-mmlab/mmdetection/blob/v2.19.0/mmdet/datasets/pipelines/transforms.py
pull request https://github.com/open-mmlab/mmdetection/pull/6867
Faulty: scenario 21 (OpenCV's pool in every worker, thread oversubscription).
"""
import atexit
import shutil
import tempfile
from pathlib import Path

import cv2
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

IMG_SCALE = (1333, 800)  # the COCO configs' (long edge, short edge)
MEAN, STD = np.array([123.675, 116.28, 103.53]), np.array([58.395, 57.12, 57.375])


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_images(root: Path, count: int = 16) -> list:
    rng = np.random.default_rng(33)
    infos = []
    for i in range(count):
        path = root / f"{i:06d}.jpg"
        cv2.imwrite(str(path), rng.integers(0, 256, (480, 640, 3), dtype=np.uint8))
        infos.append({"filename": str(path), "bboxes": rng.uniform(0, 300, (int(rng.integers(1, 5)), 4))})
    return infos


def load_image(results):
    with open(results["filename"], "rb") as f:
        results["img"] = cv2.imdecode(np.frombuffer(f.read(), np.uint8), cv2.IMREAD_COLOR)
    return results


def resize(results):
    h, w = results["img"].shape[:2]
    scale = min(max(IMG_SCALE) / max(h, w), min(IMG_SCALE) / min(h, w))
    size = (int(w * scale + 0.5), int(h * scale + 0.5))
    results["img"] = cv2.resize(results["img"], size, interpolation=cv2.INTER_LINEAR)
    results["bboxes"] = results["bboxes"] * scale
    return results


def random_flip(results, ratio=0.5):
    if np.random.rand() < ratio:
        results["img"] = np.ascontiguousarray(results["img"][:, ::-1])
        w = results["img"].shape[1]
        results["bboxes"] = np.stack([w - results["bboxes"][:, 2], results["bboxes"][:, 1],
                                      w - results["bboxes"][:, 0], results["bboxes"][:, 3]], axis=1)
    return results


def normalize(results):
    img = results["img"].astype(np.float32)
    cv2.cvtColor(img, cv2.COLOR_BGR2RGB, img)
    cv2.subtract(img, MEAN.reshape(1, -1), img)
    cv2.multiply(img, 1 / STD.reshape(1, -1), img)
    results["img"] = img
    return results


def pad(results, divisor=32):
    h, w = results["img"].shape[:2]
    ph, pw = -(-h // divisor) * divisor, -(-w // divisor) * divisor
    results["img"] = cv2.copyMakeBorder(results["img"], 0, ph - h, 0, pw - w, cv2.BORDER_CONSTANT, value=0)
    return results


class CustomDataset(Dataset):
    pipeline = (load_image, resize, random_flip, normalize, pad)

    def __init__(self, data_infos):
        self.data_infos = data_infos

    def __len__(self):
        return len(self.data_infos)

    def __getitem__(self, idx):
        results = dict(self.data_infos[idx])
        for transform in self.pipeline:
            results = transform(results)
        return torch.from_numpy(results["img"].transpose(2, 0, 1)), torch.from_numpy(results["bboxes"]).float()


def collate(batch):
    images, boxes = zip(*batch)
    return torch.stack(images), list(boxes)


def make_loader():
    # samples_per_gpu=2, workers_per_gpu=2, as the configs set them
    return DataLoader(CustomDataset(write_images(scratch())), batch_size=2, shuffle=True, num_workers=2,
                      collate_fn=collate)
