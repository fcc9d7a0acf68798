"""Scenario 22's data and its check: a corpus exported as a few Parquet files, images in a bucket.

Imported by broken.py, fixed.py, myth_shuffle_spreads_shards.py and measure_shards_vs_workers.py.
The Parquet files hold one row per sample (`id`, `key`, `label`), as image-text corpora are
published (a table of keys, the images in object storage), written in row groups of 20 rows
as `pyarrow.parquet.write_table(row_group_size=…)` does; the images (small JPEGs) sit in an
object store on 127.0.0.1 that answers each request after 30 ms, so a sample costs what a
remote read costs, whatever else the machine is running.

Nothing touches the Hub (local `data_files`: no connection is opened), and the one thing
`load_dataset` writes even when streaming, a lock file in its cache, goes to `cache_dir`,
which `corpus()` puts in the temp dir it removes.
"""
import contextlib
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from scenarios.object_store import LatencyObjectStore
from scenarios.synthetic_data import jpeg_images

RECORDS = 240
ROWS_PER_GROUP = 20  # 240 rows = 12 row groups, whatever the number of files
LATENCY_S = 0.03
WORKERS = 4


def write_parquet_files(root, files, records=RECORDS):
    """Write `records` rows into `files` Parquet files under `root`; return their paths."""
    paths, per_file = [], records // files
    for f in range(files):
        ids = range(f * per_file, records if f == files - 1 else (f + 1) * per_file)
        table = pa.table({"id": list(ids), "key": [f"{i}.jpg" for i in ids], "label": [i % 10 for i in ids]})
        path = Path(root, f"train-{f:05d}-of-{files:05d}.parquet")
        pq.write_table(table, path, row_group_size=ROWS_PER_GROUP)
        paths.append(str(path))
    return paths


@contextlib.contextmanager
def corpus(files=3):
    """(Parquet paths, a cache_dir for load_dataset, the bucket's URL); everything removed after."""
    with tempfile.TemporaryDirectory(prefix="corpus-") as root, \
            LatencyObjectStore(jpeg_images(RECORDS, size=32), latency_s=LATENCY_S) as store:
        yield write_parquet_files(root, files), str(Path(root, "hf-cache")), store.url


def epoch(loader):
    """Run one epoch; (samples per worker id, every id fetched, seconds)."""
    per_worker, ids = Counter(), []
    started = time.perf_counter()
    for batch in loader:
        per_worker.update(batch["worker"].tolist())
        ids += batch["id"].tolist()
    return per_worker, ids, time.perf_counter() - started


def check_epoch(stream, per_worker, ids, seconds):
    """Print the epoch's figures; exit with status 1 if a worker delivered nothing or a sample is lost."""
    sys.stderr.flush()  # datasets' warning (a worker's stderr) before the figures
    shares = [per_worker.get(w, 0) for w in range(WORKERS)]
    idle = [w for w, n in enumerate(shares) if n == 0]
    print(f"dataset.num_shards={stream.num_shards}, {WORKERS} workers: samples per worker {shares}, "
          f"{len(ids)} samples in {seconds:.2f} s ({len(ids) / seconds:.0f} samples/s)")
    print(f"metric num_shards={stream.num_shards}")
    print(f"metric busy_workers={WORKERS - len(idle)}")
    print(f"metric idle_workers={len(idle)}")
    print(f"metric busiest_worker_samples={max(shares)}")
    print(f"metric samples={len(ids)}")
    print(f"metric distinct_samples={len(set(ids))}")
    print(f"metric samples_per_s={len(ids) / seconds:.1f}")
    if sorted(ids) != list(range(RECORDS)):
        sys.exit(f"wrong epoch: {len(ids)} samples, {len(set(ids))} distinct, for {RECORDS} in the corpus")
    if idle:
        sys.exit(f"idle DataLoader workers: {len(idle)} of {WORKERS} delivered no sample "
                 f"(worker {', '.join(map(str, idle))}; dataset.num_shards={stream.num_shards}); "
                 f"the busiest delivered {max(shares)} of {RECORDS}")
    print(f"every one of the {WORKERS} workers delivered samples: {shares}, {RECORDS} in all, each once")
