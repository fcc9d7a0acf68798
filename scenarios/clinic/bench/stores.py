"""Bench part 1: read-only record storage for forked workers (scenario 03).

The same detection records in each store below; two forked workers read them once in random
order.  Per store: the largest growth of a worker's USS over the epoch, the peak PSS of the
main process and its workers together (/dev/shm included), the ns a worker spends per record,
the seconds to build the store, and whether a spawn worker reads a (small) store right.  Each
store is measured in a process of its own (`python -m scenarios.clinic.bench.stores`), so that
no store pays for another's memory (`--quick`: one process for all).
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import pickle
import subprocess
import sys
import time

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from scenarios.clinic import REPO_ROOT
from scenarios.clinic.bench import spawn
from scenarios.instruments import MIB, WorkerMemoryWatch, loader_memory_bytes



class NumpySerializedList:
    """Peer: the numpy serialized list of Yuxin Wu's "Demystify RAM usage in multi-process
    data loaders" (https://ppwwyyxx.com/blog/2022/Demystify-RAM-Usage-in-Multiprocess-DataLoader/):
    every record pickled, all the bytes in one numpy uint8 array, cumulative end offsets in
    another; a read slices the bytes and unpickles them.  Our reimplementation of the design."""

    def __init__(self, records):
        blobs = [np.frombuffer(pickle.dumps(r, protocol=-1), dtype=np.uint8) for r in records]
        self._ends = np.cumsum([len(b) for b in blobs], dtype=np.int64)
        self._bytes = np.concatenate(blobs)

    def __len__(self):
        return len(self._ends)

    def __getitem__(self, index):
        start = 0 if index == 0 else self._ends[index - 1].item()
        return pickle.loads(memoryview(self._bytes[start:self._ends[index].item()]))


class TorchSerializedList(NumpySerializedList):
    """Peer: detectron2's `_TorchSerializedList` (detectron2/data/common.py,
    https://github.com/facebookresearch/detectron2/blob/main/detectron2/data/common.py):
    the same two arrays held as torch tensors, which torch.multiprocessing's pickler moves to
    shared memory when a spawn or forkserver worker receives them.  Our reimplementation."""

    def __init__(self, records):
        super().__init__(records)
        self._ends, self._bytes = torch.from_numpy(self._ends), torch.from_numpy(self._bytes)

    def __getitem__(self, index):
        start = 0 if index == 0 else self._ends[index - 1].item()
        return pickle.loads(memoryview(self._bytes[start:self._ends[index].item()].numpy()))


class ArrowRecords:
    """Peer: a pyarrow Table, one of the "non-refcounted representations" the PyTorch docs
    name for workers (https://pytorch.org/docs/stable/data.html#multi-process-data-loading).
    A read turns each column's value at `index` back into Python objects.  Holds records of
    one schema only."""

    def __init__(self, records):
        import pyarrow  # here, so that the other stores run where pyarrow is missing

        table = pyarrow.Table.from_pylist(records)
        self._names = table.column_names
        self._columns = [table.column(name).combine_chunks() for name in self._names]

    def __len__(self):
        return len(self._columns[0])

    def __getitem__(self, index):
        return {name: column[index].as_py() for name, column in zip(self._names, self._columns)}


class NumpyColumns:
    """Peer: numpy column arrays, for records of a known shape (these: a file name, an image
    size, N boxes of 4 floats and N labels).  Variable-length fields are flattened, with
    offsets; a read returns arrays, not lists.  Not generic: each new field needs code."""

    def __init__(self, records):
        counts = np.fromiter((len(r["labels"]) for r in records), dtype=np.int64, count=len(records))
        self._starts = np.zeros(len(records) + 1, dtype=np.int64)
        np.cumsum(counts, out=self._starts[1:])
        self._files = np.array([r["file"] for r in records], dtype=np.bytes_)
        self._sizes = np.array([r["size"] for r in records], dtype=np.int32)
        self._boxes = np.array([b for r in records for b in r["boxes"]], dtype=np.float64).reshape(-1, 4)
        self._labels = np.array([label for r in records for label in r["labels"]], dtype=np.int64)

    def __len__(self):
        return len(self._sizes)

    def __getitem__(self, index):
        start, end = self._starts[index], self._starts[index + 1]
        return {"file": self._files[index].decode(), "size": self._sizes[index],
                "boxes": self._boxes[start:end], "labels": self._labels[start:end]}


def _packed_records(records):
    from fixes.packed_records import PackedRecords

    return PackedRecords(records)


# name: (builder, ours, generic: holds any picklable record)
STORES = {
    "list": (list, False, True),
    "ours": (_packed_records, True, True),
    "numpy_serialized": (NumpySerializedList, False, True),
    "torch_serialized": (TorchSerializedList, False, True),
    "pyarrow": (ArrowRecords, False, False),
    "numpy_columns": (NumpyColumns, False, False),
}


class TimedReads(Dataset):
    """Each batch: the worker reads its records from the store, as scenario 03's dataset does,
    and reports how long that took in its own process."""

    def __init__(self, store):
        self.store = store

    def __len__(self):
        return len(self.store)

    def __getitems__(self, indices):
        objects, started = 0, time.perf_counter_ns()
        for index in indices:
            record = self.store[index]  # and use two of its fields, as a training step would
            objects += len(record["labels"]) + (record["boxes"][0][0] >= 0)
        return len(indices), time.perf_counter_ns() - started, objects


def _as_is(batch):
    return batch


def measure_store(name: str, count: int, batch_size: int = 256) -> dict:
    """Build store `name` from `count` records and read it once through 2 forked workers.
    Meant for a process of its own (see measure_stores)."""
    records = detection_records(count)
    started = time.perf_counter()
    store = STORES[name][0](records)
    build_s = time.perf_counter() - started
    del records  # the list store is its own records; every other store keeps only its copy
    gc.collect()
    loader = DataLoader(TimedReads(store), batch_size=batch_size, shuffle=True, num_workers=2,
                        collate_fn=_as_is, multiprocessing_context="fork",
                        generator=torch.Generator().manual_seed(0))
    figures = _read_epoch(loader)
    items = figures.pop("items")
    if items != count:
        raise RuntimeError(f"store {name}: read {items} records of {count}")
    return {**figures, "build_s": round(build_s, 2)}


def _read_epoch(loader) -> dict:
    """One epoch through `loader`'s workers: their USS growth, the peak PSS, ns per record."""
    batches = iter(loader)  # forks the workers
    watch, peak_pss = WorkerMemoryWatch(), 0
    watch.sample()
    items = ns = objects = 0
    for step, (n, elapsed_ns, found) in enumerate(batches):
        items, ns, objects = items + n, ns + elapsed_ns, objects + found
        # A worker's copies only grow, so a few readings suffice (each parses the worker's smaps):
        # now and then, and the last steps before the workers exit.
        if step % 100 == 0 or step >= len(loader) - 2:
            watch.sample()
            private, shm, _ = loader_memory_bytes()
            peak_pss = max(peak_pss, private + shm)
    return {"worker_uss_growth_mb": round(watch.growth_mb(), 1), "pss_total_mb": round(peak_pss / MIB, 1),
            "ns_per_item": round(ns / max(items, 1)), "objects": int(objects), "items": items}


def detection_records(count: int) -> list:
    from scenarios.synthetic_data import detection_annotations

    return detection_annotations(count)


def measure_stores(names, count: int, separate: bool) -> dict:
    """Each store in a fresh `python -m scenarios.clinic.bench.stores` process (`separate`),
    or all of them one after another in a single one (quicker, for --quick; there a store's
    PSS also counts what the stores before it left behind in the main process)."""
    groups = [[name] for name in names] if separate else [list(names)]
    found = {}
    for group in groups:
        done = subprocess.run([sys.executable, "-m", "scenarios.clinic.bench.stores", "--store-child", ",".join(group),
                               "--records", str(count)], cwd=REPO_ROOT, capture_output=True, text=True, check=False,
                              timeout=300, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
        if done.returncode != 0:
            raise RuntimeError(f"measuring store(s) {', '.join(group)} failed:\n{done.stderr[-2000:]}")
        found.update(json.loads(done.stdout))
    return found


def compare_stores(count: int, separate: bool, say) -> dict:
    """name -> the figures of store `name`: each store read by forked workers, then each
    checked in a spawn worker."""
    measured = measure_stores(STORES, count, separate)
    if len({figures["objects"] for figures in measured.values()}) != 1:  # every store read the same data
        raise RuntimeError(f"the stores disagree on the records they hold: "
                           f"{ {name: figures['objects'] for name, figures in measured.items()} }")
    tiny = detection_records(64)
    spawned = spawn.spawn_check({name: STORES[name][0](tiny) for name in STORES}, tiny)
    found = {}
    for name, (_, ours, generic) in STORES.items():
        figures = measured[name]
        found[name] = {"ours": ours, "generic": generic,
                       **{key: figures[key] for key in ("worker_uss_growth_mb", "pss_total_mb", "ns_per_item",
                                                        "build_s")},
                       "spawn_ok": spawned[name][0]}
        if not spawned[name][0]:
            say(f"   {name} under spawn: {spawned[name][1]}")
    return found


def _store_child(argv) -> None:
    parser = argparse.ArgumentParser(prog="python -m scenarios.clinic.bench.stores")
    parser.add_argument("--store-child", required=True, help="comma-separated store names")
    parser.add_argument("--records", type=int, required=True)
    args = parser.parse_args(argv)
    found = {}
    for name in args.store_child.split(","):
        started = time.perf_counter()
        found[name] = measure_store(name, args.records)
        print(f"{name}: {found[name]} in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
        gc.collect()
    print(json.dumps(found))


if __name__ == "__main__":
    _store_child(sys.argv[1:])
