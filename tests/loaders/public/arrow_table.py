"""Rows of an Arrow IPC file memory-mapped with pyarrow and read by position, as Hugging Face
datasets backs a Dataset with a memory-mapped Arrow table: the columns are buffers, not
Python objects, so forked workers share them without copying.

Source: huggingface/datasets, src/datasets/table.py (MemoryMappedTable, read through
pa.memory_map and pa.ipc.open_stream)
https://github.com/huggingface/datasets/blob/main/src/datasets/table.py
Well built: no risk expected.
"""
import atexit
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch
from torch.utils.data import DataLoader, Dataset


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_table(path: Path, rows: int = 4_096) -> None:
    rng = np.random.default_rng(6)
    table = pa.table({"label": pa.array(rng.integers(0, 10, rows)),
                      "features": pa.FixedSizeListArray.from_arrays(
                          pa.array(rng.standard_normal(rows * 8).astype(np.float32)), 8)})
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


class ArrowRows(Dataset):
    def __init__(self, path: Path):
        self.table = pa.ipc.open_file(pa.memory_map(str(path), "r")).read_all()

    def __len__(self):
        return self.table.num_rows

    def __getitem__(self, index):
        features = self.table.column("features")[index].values.to_numpy(zero_copy_only=False)
        return torch.from_numpy(features.copy()), self.table.column("label")[index].as_py()


def make_loader():
    path = scratch() / "train.arrow"
    write_table(path)
    return DataLoader(ArrowRows(path), batch_size=64, shuffle=True, num_workers=2)
