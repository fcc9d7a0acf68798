"""A Hugging Face datasets stream over JSON-lines files, read by more DataLoader workers than it
has files: datasets gives each worker whole shards, so the extra worker gets none ("Too many
dataloader workers", datasets/iterable_dataset.py).

Source: huggingface/datasets, src/datasets/iterable_dataset.py (shards split among workers,
"Too many dataloader workers"), commit 52f7f19e7e73a625c2d18a7dcdc11d155f2ecc95
https://github.com/huggingface/datasets/blob/52f7f19e7e73a625c2d18a7dcdc11d155f2ecc95/src/datasets/iterable_dataset.py
and huggingface/datasets issue https://github.com/huggingface/datasets/issues/3423 (a stream
read with num_workers > 1).
Faulty: scenario 22 (fewer shards than workers).
"""
import atexit
import json
import shutil
import tempfile
from pathlib import Path

from datasets import load_dataset
from torch.utils.data import DataLoader


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_files(root: Path, files: int = 1, rows: int = 256) -> list:
    paths = []
    for f in range(files):
        path = root / f"part-{f:05d}.jsonl"
        path.write_text("\n".join(json.dumps({"id": f * rows + r, "value": r % 7}) for r in range(rows)))
        paths.append(str(path))
    return paths


def make_loader():
    root = scratch()
    stream = load_dataset("json", data_files=write_files(root), split="train", streaming=True,
                          cache_dir=str(root / "cache"))
    return DataLoader(stream, batch_size=32, num_workers=2)
