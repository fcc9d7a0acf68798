"""Benchmarks side by side: our fixes against what a user would pick instead (issue 14).

    python -m scenarios bench [--json] [--quick]      # or: make bench

One run measures four things and judges ours against the goals below:

1. Read-only record storage for forked workers (scenario 03).  The same detection records
   (200,000; `--quick`: 15,000) in each store below; two forked workers read them once in
   random order.  Per store: the largest growth of a worker's USS over the epoch, the peak
   PSS of the main process and its workers together (/dev/shm included), the ns a worker
   spends per record, the seconds to build the store, and whether a spawn worker reads a
   (small) store right.  Each store is measured in a process of its own, so that no store
   pays for another's memory (`--quick`: one process for all).
2. Memory in flight (scenarios 04 and 10): fixes/memory_in_flight.py's predicted peak
   against the measured one, over workers x prefetch_factor x batch size.
3. Remote storage (scenario 07): throughput per loader configuration against the bound
   min(workers / fetch time, 1 / compute time).
4. The price of a fix on the happy path, where nothing goes wrong: ns per sample with and
   without it.

Goals for ours: worker growth at most 1/10 of the list's and no more than the best generic
peer's (+1 MB, the resolution of a USS reading); indexing no slower than the best generic
peer's (5 % for timing noise); the planner within ±15 % of the measured peak.  Exit
status: 0 every goal met, 1 a goal not met, 2 pyarrow missing, 3 cannot run here (needs
Linux and fork).

A full run stores its results in scenarios/clinic/bench/results.json (read by notebooks/bench.ipynb)
and rewrites the Benchmarks block of the top README.md; `--quick` stores nothing.
"""
from __future__ import annotations

import argparse
import gc
import importlib.util
import itertools
import json
import multiprocessing
import os
import pickle
import platform
import subprocess
import sys
import time
import warnings
from multiprocessing.reduction import ForkingPickler
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, default_collate

from scenarios.host import (
    EXIT_BAD_INPUT,
    EXIT_CANNOT_RUN,
    EXIT_NOT_AS_EXPECTED,
    EXIT_OK,
)
from scenarios.instruments import (
    MIB,
    LoaderMemoryWatch,
    WorkerMemoryWatch,
    loader_memory_bytes,
)

REPO_ROOT = Path(__file__).resolve().parents[3]
RESULTS_PATH = Path(__file__).with_name("results.json")
README_BEGIN, README_END = "<!-- bench:begin -->", "<!-- bench:end -->"
SIZES = {"full": {"records": 200_000, "grid": ([1, 2], [1, 4], [8, 32]), "grid_steps": 24,
                  "remote": (0, 2, 4), "remote_steps": None, "happy_samples": 5_000},
         "quick": {"records": 15_000, "grid": ([2], [1, 4], [32]), "grid_steps": 10,
                   "remote": (0,), "remote_steps": 10, "happy_samples": 2_000}}
PLANNER_GOAL = (0.85, 1.15)


# ---------------------------------------------------------------- 1. the stores


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
        self._labels = np.array([l for r in records for l in r["labels"]], dtype=np.int64)

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
    Meant for a process of its own (see _measure_stores)."""
    records = _records(count)
    started = time.perf_counter()
    store = STORES[name][0](records)
    build_s = time.perf_counter() - started
    del records  # the list store is its own records; every other store keeps only its copy
    gc.collect()
    loader = DataLoader(TimedReads(store), batch_size=batch_size, shuffle=True, num_workers=2,
                        collate_fn=_as_is, multiprocessing_context="fork",
                        generator=torch.Generator().manual_seed(0))
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
    if items != count:
        raise RuntimeError(f"store {name}: read {items} records of {count}")
    return {"worker_uss_growth_mb": round(watch.growth_mb(), 1), "pss_total_mb": round(peak_pss / MIB, 1),
            "ns_per_item": round(ns / items), "build_s": round(build_s, 2), "objects": int(objects)}


def _records(count: int) -> list:
    from scenarios.synthetic_data import detection_annotations

    return detection_annotations(count)


def _measure_stores(names, count: int, separate: bool) -> dict:
    """Each store in a fresh `python -m scenarios.clinic.bench.suite --store-child` process (`separate`),
    or all of them one after another in a single one (quicker, for --quick; there a store's
    PSS also counts what the stores before it left behind in the main process)."""
    groups = [[name] for name in names] if separate else [list(names)]
    found = {}
    for group in groups:
        done = subprocess.run([sys.executable, "-m", "scenarios.clinic.bench.suite", "--store-child", ",".join(group),
                               "--records", str(count)], cwd=REPO_ROOT, capture_output=True, text=True, check=False,
                              timeout=300, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
        if done.returncode != 0:
            raise RuntimeError(f"measuring store(s) {', '.join(group)} failed:\n{done.stderr[-2000:]}")
        found.update(json.loads(done.stdout))
    return found


class ReadEach(Dataset):
    """In a spawn worker, each store reads the batch's indices; a store that fails says why
    and does not stop the others."""

    def __init__(self, stores: dict):
        self.stores = stores

    def __len__(self):
        return min(len(store) for store in self.stores.values())

    def __getitems__(self, indices):
        read = {}
        for name, store in self.stores.items():
            try:
                read[name] = (True, [store[i] for i in indices])
            except Exception as err:  # noqa: BLE001 -- reported per store, the others go on
                read[name] = (False, f"{type(err).__name__}: {err}")
        return read


def _plain(value):
    """Records as plain Python values, whatever container a store gives them back in."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def spawn_check(stores: dict, records: list, indices=(0, 7, 63)) -> dict:
    """name -> (ok, why): does a spawn DataLoader worker receive each store and read `records`
    at `indices` back right?  Each store is first pickled as the worker's start pickles it
    (one that cannot be is not sent); the others go to one spawn worker together, so that
    its start, a second or more, is paid once."""
    results, sendable = {}, {}
    for name, store in stores.items():
        try:
            ForkingPickler.dumps(store)  # what Process.start does with the dataset under spawn
            sendable[name] = store
        except Exception as err:  # noqa: BLE001 -- whatever pickling raises, the store cannot go
            results[name] = (False, f"cannot be sent to a spawn worker: {type(err).__name__}: {err}")
    if sendable:
        loader = DataLoader(ReadEach(sendable), batch_sampler=[list(indices)], collate_fn=_as_is,
                            num_workers=1, multiprocessing_context="spawn")
        (read,) = list(loader)
        expected = [_plain(records[i]) for i in indices]
        for name, (ok, got) in read.items():
            if ok and [_plain(record) for record in got] != expected:
                ok, got = False, "a spawn worker read different records"
            results[name] = (ok, "" if ok else got)
    return {name: results[name] for name in stores}


# ---------------------------------------------------------------- 2. memory in flight


class Crops(Dataset):
    """Scenario 10's samples: a decoded 128x128 RGB crop as float32 (192 KiB) and a label."""

    def __init__(self, count):
        self.count = count

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        return torch.full((3, 128, 128), index / self.count), torch.tensor(index % 10)


def measure_in_flight(grid, steps: int) -> list[dict]:
    from fixes.memory_in_flight import batch_nbytes, predicted_peak_bytes

    cells = []
    for workers, prefetch, batch_size in itertools.product(*grid):
        dataset = Crops(steps * batch_size)
        batch = batch_nbytes(default_collate([dataset[i] for i in range(batch_size)]))
        predicted = predicted_peak_bytes(batch, workers, prefetch)
        loader = DataLoader(dataset, batch_size=batch_size, num_workers=workers, prefetch_factor=prefetch,
                            multiprocessing_context="fork")
        watch = LoaderMemoryWatch()
        for _ in loader:
            time.sleep(0.04)  # the training step, while the workers fill every prefetch slot
        measured = watch.stop()
        cells.append({"workers": workers, "prefetch_factor": prefetch, "batch_size": batch_size,
                      "batch_mb": round(batch / MIB, 2), "predicted_mb": round(predicted / MIB, 1),
                      "measured_mb": round(measured / MIB, 1), "ratio": round(measured / predicted, 3)})
    return cells


# ---------------------------------------------------------------- 3. remote storage


def _scenario_module(folder: str, name: str):
    path = next((REPO_ROOT / "scenarios").glob(f"{folder}_*"))
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))  # the scripts import their siblings (_remote_training)
    spec = importlib.util.spec_from_file_location(f"bench_scenario{folder}_{name}", path / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def measure_remote(worker_counts, steps=None) -> list[dict]:
    """Scenario 07's loop over its slow store, with broken.py's dataset and 0..N workers
    (default prefetch), then fixed.py's loader (a batch's requests together, prefetch 4).
    `steps`: fewer than the scenario's own (for --quick)."""
    training = _scenario_module("07", "_remote_training")
    broken, fixed = _scenario_module("07", "broken"), _scenario_module("07", "fixed")
    shorten = (lambda cls: cls) if steps is None else (
        lambda cls: type(cls.__name__, (cls,), {"__len__": lambda self: training.BATCH * steps}))
    configs = [(f"{w} worker{'' if w == 1 else 's'}", shorten(broken.RemoteImages), {"num_workers": w})
               for w in worker_counts]
    configs.append(("fixed.py: 2 workers, prefetch 4, a batch's requests together", shorten(fixed.RemoteImages),
                    {"num_workers": 2, "prefetch_factor": 4}))
    rows = []
    with training.remote_store() as url:
        for label, dataset_class, kwargs in configs:
            with warnings.catch_warnings():  # 4 workers on 2 cores: waiting on the network needs no core
                warnings.filterwarnings("ignore", "This DataLoader will create", UserWarning)
                run = training.train(DataLoader(dataset_class(url), batch_size=training.BATCH, **kwargs))
            rows.append({"config": label, "throughput_per_s": round(run["throughput_per_s"], 2),
                         "bound_per_s": round(run["bound_per_s"], 2), "ratio": round(run["ratio_to_bound"], 3)})
    return rows


# ---------------------------------------------------------------- 4. the price on the happy path


class Samples(Dataset):
    def __init__(self, count, length=32):
        self.items = [(torch.full((length,), float(i)), i % 10) for i in range(count)]
        self.lookup = {i: i % 7 for i in range(count)}

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        return self.items[index]


class PlainLookup(Dataset):
    def __init__(self, table):
        self.table = table

    def __getitem__(self, index):
        return self.table[index]


class PerWorkerLookup(Dataset):
    def __init__(self, table):
        from fixes.per_worker import PerWorker

        self.table = PerWorker(dict, table)

    def __getitem__(self, index):
        return self.table.get()[index]


def _ns_per_sample(plain, fixed, samples: int, rounds: int = 5) -> tuple[float, float]:
    """Best of `rounds` for each, the two taken in turn so that a busy moment hits both."""
    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for which, work in enumerate((plain, fixed)):
            started = time.perf_counter_ns()
            work()
            best[which] = min(best[which], time.perf_counter_ns() - started)
    return best[0] / samples, best[1] / samples


def measure_happy_path(samples: int, batch_size: int = 32) -> dict:
    """ns per sample, in the main process (no workers: the price is per sample, wherever it runs)."""
    from fixes.bad_samples import SkipBadSamples, collate_good_samples
    from fixes.pad_collate import PadCollate

    data = Samples(samples)
    batches = [list(range(i, min(i + batch_size, samples))) for i in range(0, samples, batch_size)]
    skipping, padding = SkipBadSamples(data), PadCollate()
    plain_lookup, worker_lookup = PlainLookup(data.lookup), PerWorkerLookup(data.lookup)
    pairs = {
        "skip_bad_samples": (lambda: [default_collate([data[i] for i in b]) for b in batches],
                             lambda: [collate_good_samples([skipping[i] for i in b]) for b in batches]),
        "per_worker": (lambda: [plain_lookup[i] for i in range(samples)],
                       lambda: [worker_lookup[i] for i in range(samples)]),
        "pad_collate": (lambda: [default_collate([data[i] for i in b]) for b in batches],
                        lambda: [padding([data[i] for i in b]) for b in batches]),
    }
    found = {}
    for name, (plain, fixed) in pairs.items():
        plain_ns, fixed_ns = _ns_per_sample(plain, fixed, samples)
        found[name] = {"plain_ns": round(plain_ns), "fixed_ns": round(fixed_ns),
                       "extra_ns": round(fixed_ns - plain_ns)}
    return found


# ---------------------------------------------------------------- the run, the goals, the output


def goals(result: dict) -> dict:
    """goal -> met?  The figures each one compares are in `result`."""
    stores = result["stores"]
    ours, listed = stores["ours"], stores["list"]
    generic = [s for name, s in stores.items() if s["generic"] and not s["ours"] and name != "list"]
    checks = {
        "ours_growth_at_most_a_tenth_of_list":
            ours["worker_uss_growth_mb"] <= listed["worker_uss_growth_mb"] / 10,
        "ours_growth_no_worse_than_best_generic_peer":
            ours["worker_uss_growth_mb"] <= min(s["worker_uss_growth_mb"] for s in generic) + 1.0,
        "ours_indexing_no_slower_than_best_generic_peer":
            ours["ns_per_item"] <= 1.05 * min(s["ns_per_item"] for s in generic),
        "ours_works_under_spawn": ours["spawn_ok"],
        "planner_within_15_percent": all(PLANNER_GOAL[0] <= c["ratio"] <= PLANNER_GOAL[1]
                                         for c in result["in_flight"]),
    }
    return checks


def run(quick: bool = False, show=sys.stderr) -> dict:
    size = SIZES["quick" if quick else "full"]
    say = (lambda text: print(text, file=show, flush=True)) if show else (lambda text: None)
    started = time.perf_counter()
    result = {"quick": quick, "records": size["records"], "torch": torch.__version__,
              "python": platform.python_version(),
              "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores",
              "load_average": [round(x, 2) for x in os.getloadavg()]}

    phases, mark = {}, [time.perf_counter()]

    def lap(name):
        phases[name] = round(time.perf_counter() - mark[0], 1)
        mark[0] = time.perf_counter()

    say(f"1. stores: {size['records']:,} records, 2 forked workers, one epoch each …")
    measured = _measure_stores(STORES, size["records"], separate=not quick)
    tiny = _records(64)
    lap("stores")
    if len({figures["objects"] for figures in measured.values()}) != 1:  # every store read the same data
        raise RuntimeError(f"the stores disagree on the records they hold: "
                           f"{ {name: figures['objects'] for name, figures in measured.items()} }")
    spawned = spawn_check({name: STORES[name][0](tiny) for name in STORES}, tiny)
    lap("spawn_check")
    result["stores"] = {}
    for name, (_, ours, generic) in STORES.items():
        figures = measured[name]
        result["stores"][name] = {"ours": ours, "generic": generic,
                                  **{k: figures[k] for k in ("worker_uss_growth_mb", "pss_total_mb",
                                                             "ns_per_item", "build_s")},
                                  "spawn_ok": spawned[name][0]}
        if not spawned[name][0]:
            say(f"   {name} under spawn: {spawned[name][1]}")
    say(store_table(result))

    say("2. memory in flight: the planner's prediction against the measured peak …")
    result["in_flight"] = measure_in_flight(size["grid"], size["grid_steps"])
    lap("in_flight")
    say(in_flight_table(result))

    say("3. remote storage: throughput against min(workers / fetch, 1 / compute) …")
    result["remote"] = measure_remote(size["remote"], size["remote_steps"])
    lap("remote")
    say(remote_table(result))

    say("4. the price of each fix on the happy path …")
    result["happy_path"] = measure_happy_path(size["happy_samples"])
    lap("happy_path")
    say(happy_table(result))

    result["goals"] = goals(result)
    result["phase_s"] = phases
    result["wall_s"] = round(time.perf_counter() - started, 1)
    return result


def store_table(result: dict) -> str:
    rows = ["| store | ours | generic | worker USS growth (MB) | PSS, all processes (MB) | ns per record | build (s) | spawn ok |",
            "|---|---|---|---|---|---|---|---|"]
    for name, s in result["stores"].items():
        rows.append(f"| `{name}` | {'yes' if s['ours'] else ''} | {'yes' if s['generic'] else 'no'} | "
                    f"{s['worker_uss_growth_mb']:.1f} | {s['pss_total_mb']:.0f} | {s['ns_per_item']:,} | "
                    f"{s['build_s']:.2f} | {'yes' if s['spawn_ok'] else 'NO'} |")
    return "\n".join(rows)


def in_flight_table(result: dict) -> str:
    rows = ["| workers | prefetch_factor | batch | batch (MiB) | predicted (MiB) | measured (MiB) | measured / predicted |",
            "|---|---|---|---|---|---|---|"]
    for c in result["in_flight"]:
        flag = "" if PLANNER_GOAL[0] <= c["ratio"] <= PLANNER_GOAL[1] else " (outside ±15 %)"
        rows.append(f"| {c['workers']} | {c['prefetch_factor']} | {c['batch_size']} | {c['batch_mb']:.2f} | "
                    f"{c['predicted_mb']:.1f} | {c['measured_mb']:.1f} | {c['ratio']:.2f}{flag} |")
    return "\n".join(rows)


def remote_table(result: dict) -> str:
    rows = ["| loader | steps/s | bound (steps/s) | of the bound |", "|---|---|---|---|"]
    for r in result["remote"]:
        rows.append(f"| {r['config']} | {r['throughput_per_s']:.1f} | {r['bound_per_s']:.1f} | {r['ratio']:.0%} |")
    return "\n".join(rows)


def happy_table(result: dict) -> str:
    rows = ["| fix | plain (ns/sample) | with the fix (ns/sample) | price (ns/sample) |", "|---|---|---|---|"]
    for name, h in result["happy_path"].items():
        rows.append(f"| `{name}` | {h['plain_ns']:,} | {h['fixed_ns']:,} | {h['extra_ns']:+,} |")
    return "\n".join(rows)


def goals_lines(result: dict) -> str:
    return "\n".join(f"- {'met' if met else 'NOT met'}: {name.replace('_', ' ')}"
                     for name, met in result["goals"].items())


def readme_block(result: dict) -> str:
    return "\n".join([
        README_BEGIN,
        (f"Generated by `make bench` ({result['wall_s']:.0f} s): torch {result['torch']}, Python {result['python']}, "
         f"{result['machine']}, load average {result['load_average'][0]:.1f} at the start."), "",
        f"Read-only records for forked workers ({result['records']:,} records, 2 workers, one epoch in random order):", "",
        store_table(result), "",
        "Memory in flight, `fixes/memory_in_flight.py`'s prediction against the measured peak:", "",
        in_flight_table(result), "",
        "Remote storage (scenario 07's store, 20 ms a request):", "",
        remote_table(result), "",
        "The price of each fix where nothing goes wrong:", "",
        happy_table(result), "",
        "Goals:", "", goals_lines(result),
        README_END])


def write_readme(result: dict, readme: Path = REPO_ROOT / "README.md") -> None:
    text = readme.read_text()
    if README_BEGIN not in text or README_END not in text:
        raise RuntimeError(f"{readme.name} has no {README_BEGIN} … {README_END} block to fill")
    head, rest = text.split(README_BEGIN, 1)
    readme.write_text(head + readme_block(result) + rest.split(README_END, 1)[1])


def main(quick: bool = False, as_json: bool = False) -> int:
    if sys.platform != "linux" or "fork" not in multiprocessing.get_all_start_methods():
        print("cannot run here: the benchmark measures forked DataLoader workers and reads /proc "
              "(Linux only); run it on a Linux machine or in a Linux container", file=sys.stderr)
        return EXIT_CANNOT_RUN
    if importlib.util.find_spec("pyarrow") is None:
        print("error: the benchmark compares against a pyarrow table: run `make setup` "
              "(or `pip install -r requirements.txt`)", file=sys.stderr)
        return EXIT_BAD_INPUT
    result = run(quick=quick, show=sys.stderr)
    if not quick:
        RESULTS_PATH.write_text(json.dumps(result, indent=1) + "\n")
        write_readme(result)
        print(f"wrote {RESULTS_PATH.relative_to(REPO_ROOT)} and the Benchmarks block of README.md",
              file=sys.stderr)
    print(f"goals ({result['wall_s']:.0f} s):\n{goals_lines(result)}", file=sys.stderr)
    if as_json:
        print(json.dumps(result, indent=1))
    return EXIT_OK if all(result["goals"].values()) else EXIT_NOT_AS_EXPECTED


def _store_child(argv) -> None:
    parser = argparse.ArgumentParser(prog="python -m scenarios.clinic.bench.suite")
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
