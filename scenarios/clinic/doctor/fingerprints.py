"""What a batch is made of, for the probe's child: its tensors, its bytes as /dev/shm holds them,
and content digests of the dataset's attributes (a copy in every worker is told
from a change by its digest, not its identity)."""
from __future__ import annotations

import hashlib
import pickle
from collections.abc import Mapping

import numpy as np
import torch

from fixes.memory_in_flight import batch_nbytes
from scenarios.clinic.doctor.holdings import kind_of

HASH_LIMIT_BYTES = 64 * 2**20  # fingerprints skip bigger arrays (and say so)


def _tensors(batch, seen: set | None = None):
    """Every tensor and numpy array in a collated batch (tuples, lists, dicts, nested, and the attributes
    of the objects a collate_fn returns: a worker pickles their tensors to the loop as well)."""
    seen = set() if seen is None else seen
    if id(batch) in seen:
        return
    seen.add(id(batch))
    if isinstance(batch, (torch.Tensor, np.ndarray)):
        yield batch
    elif isinstance(batch, Mapping):
        for value in batch.values():
            yield from _tensors(value, seen)
    elif isinstance(batch, (list, tuple)):
        for item in batch:
            yield from _tensors(item, seen)
    elif hasattr(batch, "__dict__") and not isinstance(batch, type) and not callable(batch):
        for value in vars(batch).values():
            yield from _tensors(value, seen)


def batch_shape(batch) -> dict:
    """Bytes as /dev/shm holds them (fixes/memory_in_flight.py's count) and descriptors: one
    per tensor storage under the file_descriptor strategy."""
    storages = {part.untyped_storage().data_ptr() or id(part) for part in _tensors(batch)
                if isinstance(part, torch.Tensor)}
    return {"bytes": batch_nbytes(batch), "storages": len(storages)}


def _feed_tensor(digest, tensor: torch.Tensor) -> None:
    tensor = tensor.detach().cpu()
    digest.update(f"T{tuple(tensor.shape)}{tensor.dtype}".encode())
    if tensor.numel() * tensor.element_size() <= HASH_LIMIT_BYTES:
        digest.update(tensor.contiguous().numpy().tobytes() if tensor.dtype != torch.bfloat16
                      else tensor.float().contiguous().numpy().tobytes())


def fingerprint(value, depth: int = 0) -> str:
    """A digest of a batch or an attribute's content (not its identity)."""
    digest = hashlib.sha1()

    def feed(item, level):
        if isinstance(item, torch.Tensor):
            _feed_tensor(digest, item)
        elif isinstance(item, np.ndarray):
            digest.update(f"A{item.shape}{item.dtype}".encode())
            if item.dtype != object and item.nbytes <= HASH_LIMIT_BYTES:
                digest.update(np.ascontiguousarray(item).tobytes())
            elif item.dtype == object and level < 4:
                for element in item.flat[:10_000]:
                    feed(element, level + 1)
        elif isinstance(item, Mapping) and level < 6:
            keys = list(item)
            digest.update(f"M{len(keys)}".encode())
            for key in keys[::max(1, len(keys) // 256)]:
                digest.update(repr(key).encode())
                feed(item[key], level + 1)
        elif isinstance(item, (list, tuple)) and level < 6:
            digest.update(f"L{len(item)}".encode())
            # A long index is judged by an even sample: hashing 10 million records would
            # take longer than the probe may.
            step = max(1, len(item) // 256)
            for element in item[::step]:
                feed(element, level + 1)
        elif kind_of(item) == "rng":
            digest.update(b"R")  # a generator advances as it draws: 12's draws check is about it
        elif hasattr(item, "__dict__") and not isinstance(item, type) and level < 6:
            digest.update(type(item).__qualname__.encode())
            feed(vars(item), level + 1)
        else:
            try:
                digest.update(pickle.dumps(item, protocol=4))
            except Exception:
                digest.update(repr(type(item)).encode())
    feed(value, depth)
    return digest.hexdigest()[:16]


def attribute_fingerprints(dataset) -> dict[str, str]:
    """Content digest of each attribute of the dataset (and of a dataset it wraps)."""
    found = {}

    def visit(obj, path, level):
        for name, value in list(getattr(obj, "__dict__", {}).items()):
            where = f"{path}.{name}"
            if value is None or callable(value) and not hasattr(value, "__dict__"):
                continue
            if isinstance(value, torch.Tensor) and value.is_shared():
                continue  # shared on purpose (torch.Tensor.share_memory_): every worker sees it
            if kind_of(value) == "rng":
                continue  # a generator advances as it draws: the draws check is about it
            if level < 1 and hasattr(value, "__getitem__") and hasattr(value, "__dict__") \
                    and not isinstance(value, (torch.Tensor, np.ndarray)):
                visit(value, where, level + 1)
            found[where] = fingerprint(value)
    visit(dataset, "dataset", 0)
    return found


def cache_like(dataset, path: str) -> bool:
    """Whether an attribute (attribute_fingerprints' path) is a mapping, or an object holding one: samples
    kept by their index, which each worker may fill for itself; not a list, a count or a mask to be shared."""
    value = dataset
    for name in path.split(".")[1:]:
        value = getattr(value, name, None)
    return isinstance(value, Mapping) or any(isinstance(v, Mapping) for v in getattr(value, "__dict__", {}).values())


def per_worker(by_worker: dict) -> dict:
    """Samples each worker delivered, and how many of them another worker delivered too: a
    stream the workers do not split arrives once from each of them, whatever splits it."""
    if not by_worker:
        return {}
    owners = {}
    for worker, hashes in by_worker.items():
        for h in set(hashes):
            owners.setdefault(h, set()).add(worker)
    return {"per_worker": {w: len(h) for w, h in by_worker.items()},
            "across_workers": sum(1 for found in owners.values() if len(found) > 1)}
