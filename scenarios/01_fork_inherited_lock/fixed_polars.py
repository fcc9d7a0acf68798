"""Scenario 01, fixed (Polars): spawned workers build a Polars thread pool of their own.

    python scenarios/01_fork_inherited_lock/broken_polars.py   # hangs before its first batch
    python scenarios/01_fork_inherited_lock/fixed_polars.py    # eight batches

The training data sits in Parquet shards, read with Polars.  The main process
counts the rows with one lazy query before it builds the loader, which starts
Polars' thread pool.  broken_polars.py forks its workers after that, and each
worker's first scan_parquet(...).collect() hands its work to a pool whose
threads were not copied by fork: nothing happens, no batch, no error, no CPU
use, until the watchdog of worker 0 prints where it waits (30 s).
fixed_polars.py starts its workers with spawn, as Polars' documentation asks.
"""
import faulthandler
import tempfile
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from torch.utils.data import DataLoader, Dataset

SHARDS = 8
ROWS = 20_000  # per shard


def write_shards(folder):  # the data set as it arrives, written by another tool (here pyarrow)
    for shard in range(SHARDS):
        ids = np.arange(shard * ROWS, (shard + 1) * ROWS)
        pq.write_table(pa.table({"id": ids, "label": ids % 10, "x": ids * 0.5}),
                       Path(folder, f"shard_{shard}.parquet"))
    return sorted(Path(folder).glob("shard_*.parquet"))


class ParquetShards(Dataset):  # one item is one shard, read and summarised per label
    def __init__(self, paths):
        self.paths = paths

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, index):
        per_label = (pl.scan_parquet(self.paths[index]).group_by("label")
                     .agg(pl.col("x").mean()).sort("label").collect())
        return torch.tensor(per_label["x"].to_numpy())


def arm_watchdog(worker_id):
    # The demo must not outlive itself; staggered, so that two stacks never interleave.
    faulthandler.dump_traceback_later(30 + 10 * worker_id, exit=True)


def main():
    with tempfile.TemporaryDirectory() as folder:
        paths = write_shards(folder)
        rows = pl.scan_parquet(paths).select(pl.len()).collect().item()  # starts Polars' thread pool
        print(f"{rows} rows in {len(paths)} shards", flush=True)
        # FIX: spawn, as Polars asks: each worker is a new interpreter, whose Polars starts its own pool.
        loader = DataLoader(ParquetShards(paths), batch_size=1, num_workers=2,
                            worker_init_fn=arm_watchdog, multiprocessing_context="spawn")
        print("training: waiting for the first batch", flush=True)
        for step, (means,) in enumerate(loader):
            print(f"step {step}: mean x per label {means[:3].tolist()} …")
        print(f"metric batches={step + 1}")
        print("epoch done")


if __name__ == "__main__":
    main()
