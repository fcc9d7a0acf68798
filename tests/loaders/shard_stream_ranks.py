"""Scenario 29's loaders, built as its scripts build them, for the doctor (examined as two ranks):

    python -m scenarios doctor tests/loaders/shard_stream_ranks.py:worker_split_only    # broken.py's: 29
    python -m scenarios doctor tests/loaders/shard_stream_ranks.py:rank_then_worker     # fixed.py's: nothing
    python -m scenarios doctor tests/loaders/shard_stream_ranks.py:webdataset_default   # the ValueError: 29

The shards are written to a temporary folder removed when the process ends.
"""
import atexit
import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path

import webdataset as wds
from torch.utils.data import DataLoader

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
