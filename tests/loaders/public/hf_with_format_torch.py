"""A map-style Hugging Face Dataset saved to disk, loaded back memory-mapped with
load_from_disk, and given to a DataLoader with workers after with_format("torch"), as the
datasets guide "Use with PyTorch" shows: rows come out of the Arrow table as tensors.

Source: huggingface/datasets, docs/source/use_with_pytorch.mdx (Dataset.with_format("torch"),
"Data loading" with num_workers), commit e60c99fbb626f6a8f5993b69c28ed02dbcda532a
https://github.com/huggingface/datasets/blob/e60c99fbb626f6a8f5993b69c28ed02dbcda532a/docs/source/use_with_pytorch.mdx
Well built: no risk expected (an Arrow table memory-mapped from disk, read by position).
"""
import atexit
import shutil
import tempfile
from pathlib import Path

import numpy as np
from datasets import Dataset, load_from_disk
from torch.utils.data import DataLoader


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_dataset(root: Path, rows: int = 4_000) -> Path:
    rng = np.random.default_rng(26)
    table = Dataset.from_dict({"features": rng.standard_normal((rows, 32)).astype(np.float32),
                               "label": rng.integers(0, 5, rows)})
    table.save_to_disk(str(root / "train"))
    return root / "train"


def make_loader():
    dataset = load_from_disk(str(write_dataset(scratch()))).with_format("torch")
    return DataLoader(dataset, batch_size=64, shuffle=True, num_workers=2)
