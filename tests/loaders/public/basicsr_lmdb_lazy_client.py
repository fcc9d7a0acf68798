"""Paired low/high-resolution patches stored in two LMDB environments and read as BasicSR's
PairedImageDataset reads them: __init__ only lists the keys from each database's
meta_info.txt and keeps file_client = None; the first __getitem__ in each worker builds the
FileClient, whose LMDB backend opens the environments read-only (lock=False, readahead=False).
Images are PNG bytes decoded with cv2.imdecode, cropped at matching positions and flipped.

Source: XPixelGroup/BasicSR, basicsr/data/paired_image_dataset.py (file_client created in
__getitem__), commit 01a75fb9fcdc686b3af9f6602d392e6c6fae0b32
https://github.com/XPixelGroup/BasicSR/blob/01a75fb9fcdc686b3af9f6602d392e6c6fae0b32/basicsr/data/paired_image_dataset.py
and basicsr/utils/file_client.py (LmdbBackend), basicsr/data/data_util.py (paired_paths_from_lmdb).
Well built: no risk expected (each worker opens its own LMDB environments).
"""
import atexit
import random
import shutil
import tempfile
from pathlib import Path

import cv2
import lmdb
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

SCALE, GT_SIZE = 2, 32


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_lmdb_pair(root: Path, count: int = 160) -> tuple:
    rng = np.random.default_rng(25)
    gt_root, lq_root = root / "train_HR.lmdb", root / "train_LR_x2.lmdb"
    gt_env, lq_env = (lmdb.open(str(p), map_size=64 << 20) for p in (gt_root, lq_root))
    gt_meta, lq_meta = [], []
    with gt_env.begin(write=True) as gt_txn, lq_env.begin(write=True) as lq_txn:
        for i in range(count):
            key = f"{i:06d}_s001"
            gt = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
            lq = cv2.resize(gt, (32, 32), interpolation=cv2.INTER_AREA)
            gt_txn.put(key.encode(), cv2.imencode(".png", gt)[1].tobytes())
            lq_txn.put(key.encode(), cv2.imencode(".png", lq)[1].tobytes())
            gt_meta.append(f"{key}.png (64,64,3) 1")
            lq_meta.append(f"{key}.png (32,32,3) 1")
    gt_env.close()
    lq_env.close()
    (gt_root / "meta_info.txt").write_text("\n".join(gt_meta))
    (lq_root / "meta_info.txt").write_text("\n".join(lq_meta))
    return lq_root, gt_root


def paired_paths_from_lmdb(lq_root: Path, gt_root: Path) -> list:
    keys = [line.split(".")[0] for line in (gt_root / "meta_info.txt").read_text().splitlines()]
    return [{"lq_path": key, "gt_path": key} for key in keys]


class LmdbBackend:
    def __init__(self, db_paths, client_keys):
        self._client = {key: lmdb.open(str(path), readonly=True, lock=False, readahead=False)
                        for key, path in zip(client_keys, db_paths)}

    def get(self, filepath, client_key):
        with self._client[client_key].begin(write=False) as txn:
            return txn.get(filepath.encode("ascii"))


class PairedImageDataset(Dataset):
    def __init__(self, lq_root: Path, gt_root: Path):
        self.file_client = None
        self.io_backend_opt = {"db_paths": [lq_root, gt_root], "client_keys": ["lq", "gt"]}
        self.paths = paired_paths_from_lmdb(lq_root, gt_root)

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        if self.file_client is None:
            self.file_client = LmdbBackend(**self.io_backend_opt)
        paths = self.paths[index]
        img_gt = self.imfrombytes(self.file_client.get(paths["gt_path"], "gt"))
        img_lq = self.imfrombytes(self.file_client.get(paths["lq_path"], "lq"))
        # paired random crop: the same place in both images
        lq_size = GT_SIZE // SCALE
        top, left = random.randint(0, img_lq.shape[0] - lq_size), random.randint(0, img_lq.shape[1] - lq_size)
        img_lq = img_lq[top:top + lq_size, left:left + lq_size]
        img_gt = img_gt[top * SCALE:top * SCALE + GT_SIZE, left * SCALE:left * SCALE + GT_SIZE]
        if random.random() < 0.5:
            img_gt, img_lq = img_gt[:, ::-1], img_lq[:, ::-1]
        return {"lq": self.to_tensor(img_lq), "gt": self.to_tensor(img_gt),
                "lq_path": paths["lq_path"], "gt_path": paths["gt_path"]}

    @staticmethod
    def imfrombytes(content: bytes) -> np.ndarray:
        return cv2.imdecode(np.frombuffer(content, np.uint8), cv2.IMREAD_COLOR).astype(np.float32) / 255.0

    @staticmethod
    def to_tensor(image: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(image[..., ::-1].transpose(2, 0, 1)))  # BGR to RGB, CHW


def make_loader():
    return DataLoader(PairedImageDataset(*write_lmdb_pair(scratch())), batch_size=16, shuffle=True,
                      num_workers=2, drop_last=True)
