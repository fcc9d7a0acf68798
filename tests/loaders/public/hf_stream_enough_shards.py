"""A Hugging Face datasets stream over as many JSON-lines files as workers: the library's own
iterable splits the shards among the DataLoader workers (get_worker_info is called in datasets'
code, not in anything the user wrote), so each row arrives once.

Source: huggingface/datasets, src/datasets/iterable_dataset.py (shards split among workers),
commit 52f7f19e7e73a625c2d18a7dcdc11d155f2ecc95
https://github.com/huggingface/datasets/blob/52f7f19e7e73a625c2d18a7dcdc11d155f2ecc95/src/datasets/iterable_dataset.py
Well built: no risk expected (a split made by a library is a split: scenario 13 must not trip).
Gathered after the doctor's rules of issue 27 were written.
"""
import atexit
import json
import shutil
import tempfile
from pathlib import Path

from datasets import load_dataset
from torch.utils.data import DataLoader


def make_loader():
    root = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, root, True)
    files = []
    for part in range(2):
        path = root / f"part-{part:05d}.jsonl"
        path.write_text("\n".join(json.dumps({"id": part * 200 + r, "value": r % 5}) for r in range(200)))
        files.append(str(path))
    stream = load_dataset("json", data_files=files, split="train", streaming=True, cache_dir=str(root / "cache"))
    return DataLoader(stream, batch_size=16, num_workers=2)
