"""Image ids and labels kept in a SQLite database, connected once when the dataset is made."""
import sqlite3
import tempfile
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset

DATABASE = Path(tempfile.gettempdir()) / "clinic-doctor-data" / "labels.sqlite"


class LabelledFeatures(Dataset):
    def __init__(self, database):
        self.db = sqlite3.connect(database, check_same_thread=False)
        self.count = self.db.execute("SELECT COUNT(*) FROM labels").fetchone()[0]

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        (label,) = self.db.execute("SELECT label FROM labels WHERE id = ?", (index,)).fetchone()
        return torch.full((16,), float(index)), label


def make_loader():
    if not DATABASE.exists():
        DATABASE.parent.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(DATABASE) as db:
            db.execute("CREATE TABLE labels (id INTEGER PRIMARY KEY, label INTEGER)")
            db.executemany("INSERT INTO labels VALUES (?, ?)", [(i, i % 10) for i in range(1000)])
    return DataLoader(LabelledFeatures(DATABASE), batch_size=50, shuffle=True, num_workers=2)
