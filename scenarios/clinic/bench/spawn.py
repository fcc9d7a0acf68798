"""Bench part 1, the spawn column: does a spawn (or forkserver) worker receive each record
store and read it right?  Python 3.14 makes forkserver the default on Linux, so a store that
only works under fork is a trap waiting for an upgrade."""
from __future__ import annotations

from multiprocessing.reduction import ForkingPickler

import numpy as np
from torch.utils.data import DataLoader, Dataset


def _as_is(batch):
    return batch


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
            except Exception as err:  # reported per store, the others go on
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
        except Exception as err:  # whatever pickling raises, the store cannot go
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
