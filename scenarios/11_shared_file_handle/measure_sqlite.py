"""Scenario 11, measured: the records in SQLite, its connection opened in __init__ and read by forked workers.

    python scenarios/11_shared_file_handle/measure_sqlite.py

broken.py's records and checks, stored in one SQLite table (a blob per
record) on a cold page cache, the connection opened once in __init__ as
broken.py opens its file.  SQLite reads pages by position (pread), so the
offset the workers share moves under nobody: expect every sample to match its
checksum.  SQLite's documentation still says not to carry a connection across
fork(): its locks are per process, and a write transaction open in the parent
at that moment leaves the workers' writes locked out.  Reading is what this
measures.
"""
import sqlite3

import numpy as np

from _record_file import RECORD_BYTES, evict_from_page_cache
from broken import main


class SqliteRecords:
    def __init__(self, path, count):
        database = path.with_suffix(".sqlite")
        records = np.fromfile(path, dtype=np.uint8, count=count * RECORD_BYTES).reshape(count, RECORD_BYTES)
        with sqlite3.connect(database) as build:
            build.execute("CREATE TABLE records (id INTEGER PRIMARY KEY, data BLOB)")
            build.executemany("INSERT INTO records VALUES (?, ?)", ((i, r.tobytes()) for i, r in enumerate(records)))
        build.close()
        evict_from_page_cache(database)
        self.connection, self.count = sqlite3.connect(database), count  # shared by the forked workers

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        (data,) = self.connection.execute("SELECT data FROM records WHERE id = ?", (index,)).fetchone()
        return index, np.frombuffer(data, dtype=np.uint8).copy()


if __name__ == "__main__":
    main(SqliteRecords)
