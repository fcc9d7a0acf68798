"""An image folder read with Pillow; one file was cut short by an interrupted copy."""
import tempfile
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

ROOT = Path(tempfile.gettempdir()) / "clinic-doctor-data" / "pets"


def write_images(root: Path, count: int = 64) -> None:
    rng = np.random.default_rng(0)
    for i in range(count):
        path = root / ("cat" if i % 2 else "dog") / f"{i:04d}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (40, 40, 3), dtype=np.uint8)).save(path, quality=90)
    damaged = root / "dog" / "0010.jpg"
    damaged.write_bytes(damaged.read_bytes()[:300])


class ImageFolder(Dataset):
    def __init__(self, root):
        self.paths = sorted(Path(root).rglob("*.jpg"))
        self.classes = sorted({p.parent.name for p in self.paths})

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        path = self.paths[index]
        image = Image.open(path).convert("RGB").resize((32, 32))
        pixels = torch.from_numpy(np.asarray(image).copy()).permute(2, 0, 1)
        return pixels, self.classes.index(path.parent.name)


def make_loader():
    if not (ROOT / "dog" / "0062.jpg").exists():
        write_images(ROOT)
    return DataLoader(ImageFolder(ROOT), batch_size=8, num_workers=2)
