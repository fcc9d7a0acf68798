"""Scenario 29's loaders, built as its scripts build them, for the doctor (examined as two ranks):

    python -m scenarios doctor tests/loaders/shard_stream_ranks.py:worker_split_only    # broken.py's: 29
    python -m scenarios doctor tests/loaders/shard_stream_ranks.py:rank_then_worker     # fixed.py's: nothing
    python -m scenarios doctor tests/loaders/shard_stream_ranks.py:webdataset_default   # the ValueError: 29
    python -m scenarios doctor tests/loaders/shard_stream_ranks.py:rank_read_for_logging  # RANK read, no split: 29
    python -m scenarios doctor tests/loaders/shard_stream_ranks.py:split_by_process_group # dist.get_rank(): nothing

The shards are written to a temporary folder removed when the process ends.
"""
import atexit
import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path

import os

import torch.distributed as dist
import webdataset as wds
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

FOLDER = next((Path(__file__).resolve().parents[2] / "scenarios").glob("29_*"))


def _script(name: str):
    sys.path.insert(0, str(FOLDER))
    spec = importlib.util.spec_from_file_location(f"s29_{name}", FOLDER / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _urls():
    root = tempfile.mkdtemp(prefix="clinic-29-doctor-")
    atexit.register(shutil.rmtree, root, True)
    return _script("_two_ranks").write_shards(root)


def _loader(dataset):
    return DataLoader(dataset, batch_size=8, num_workers=2, multiprocessing_context="fork")


def worker_split_only():
    return _loader(_script("broken").shard_stream(_urls()))


def rank_then_worker():
    return _loader(_script("fixed").shard_stream(_urls()))


def webdataset_default():
    return _loader(wds.WebDataset(_urls(), shardshuffle=False).map(_script("broken").sample_index))


class _Records(IterableDataset):
    """96 records split between the workers; `ranks()` says which rank of how many this process is."""

    def ranks(self) -> tuple[int, int]:
        return 0, 1

    def __iter__(self):
        rank, world = self.ranks()
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info else (0, 1)
        yield from range(rank * workers + worker, 96, world * workers)


class _LogsOnRankZero(_Records):
    """A user's stream that reads RANK, but only to print from rank 0: it never splits by rank."""

    def __iter__(self):
        if os.environ.get("RANK", "0") == "0" and get_worker_info() is None:
            print("streaming records")
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info else (0, 1)
        yield from range(worker, 96, workers)


class _SplitByProcessGroup(_Records):
    """A stream that takes its rank from the process group, as many trainers' streams do."""

    def ranks(self) -> tuple[int, int]:
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
        return 0, 1


def rank_read_for_logging():
    return _loader(_LogsOnRankZero())


def split_by_process_group():
    return _loader(_SplitByProcessGroup())
