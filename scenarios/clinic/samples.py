"""One fingerprint of a sample, which observer.py hands to both places that count samples: the
grader's hook (run/loop_hook.py, in an attempt's training process) and the doctor's probe
(doctor/probe_child.py).  Both count scenario 13's repeated samples, so both must call a sample the
same thing.

Loaded inside an attempt's processes: it imports numpy only when it fingerprints, never torch, and
never touches the attempt's own random generators.
"""
from __future__ import annotations

import hashlib
import pickle

ROW_BYTES = 16384  # a longer sample is fingerprinted on evenly spaced bytes: the cost stays per sample
_WEIGHTS: list = []


def batch_arrays(batch, depth: int = 0) -> list:
    """The tensors and arrays of a collated batch (a tuple, list or dict of them, or one, or the
    attributes of an object a collate_fn returns), as numpy arrays."""
    if depth > 3:
        return []
    if hasattr(batch, "detach"):
        if not batch.dim():
            return []
        batch = batch.detach().cpu()
        try:
            return [batch.numpy()]
        except TypeError:  # bfloat16 and others numpy has no type for
            return [batch.float().numpy()]
    if type(batch).__module__ == "numpy" and getattr(batch, "ndim", 0):
        return [batch] if batch.dtype != object else []
    if isinstance(batch, dict):
        items = batch.values()
    elif isinstance(batch, (list, tuple)):
        items = batch
    elif hasattr(batch, "__dict__") and not isinstance(batch, type) and not callable(batch):
        items = vars(batch).values()
    else:
        items = ()
    return [array for item in items for array in batch_arrays(item, depth + 1)]


_PLAIN = (str, bytes, int, float, bool, type(None))


def batch_columns(batch, count: int, depth: int = 0) -> list[list]:
    """The fields of a collated batch that no tensor holds: lists of `count` plain values (a caption,
    a path, a label per sample: default_collate leaves strings a list), found where batch_arrays looks."""
    if depth > 3 or hasattr(batch, "detach") or type(batch).__module__ == "numpy":
        return []
    if isinstance(batch, (list, tuple)) and len(batch) == count and batch and all(isinstance(i, _PLAIN) for i in batch):
        return [list(batch)]
    items = batch.values() if isinstance(batch, dict) else batch if isinstance(batch, (list, tuple)) else ()
    return [column for item in items for column in batch_columns(item, count, depth + 1)]


def sample_fingerprints(batch, fields: list | None = None) -> list[str]:
    """One fingerprint per sample: its rows of every tensor in the batch whose first dimension is the
    batch's, and its value of every field no tensor holds (batch_columns), hashed together (the same
    bytes give the same fingerprint in any process).  A batch with no tensor: one per item of a list
    (strings, say), else one for the whole batch.  `fields`, a list: each field's own fingerprints are
    appended to it, one list per tensor, then one per plain field."""
    arrays = batch_arrays(batch)
    if not arrays:
        return [_digest(item) for item in batch] if isinstance(batch, list) else [_digest(batch)]
    import numpy as np

    count = len(arrays[0])
    if not _WEIGHTS:  # odd 64-bit weights of a generator of our own, never the attempt's
        _WEIGHTS.append(np.random.default_rng(2024).integers(0, 2**63, ROW_BYTES, dtype=np.uint64) * 2 + 1)
    owns = []
    for array in arrays:
        if len(array) != count:
            continue
        rows = np.ascontiguousarray(array).reshape(count, -1).view(np.uint8).reshape(count, -1)
        if rows.shape[1] > ROW_BYTES:
            rows = rows[:, ::-(-rows.shape[1] // ROW_BYTES)]
        with np.errstate(over="ignore"):
            owns.append(rows.astype(np.uint64) @ _WEIGHTS[0][:rows.shape[1]])
    owns += [np.array([int(_digest(value), 16) for value in column], dtype=np.uint64)
             for column in batch_columns(batch, count)]
    total = np.zeros(count, dtype=np.uint64)
    for own in owns:
        with np.errstate(over="ignore"):
            total = total * np.uint64(31) + own
        if fields is not None:
            fields.append([format(int(value), "x") for value in own])
    return [format(int(value), "x") for value in total]


def _digest(item) -> str:
    try:
        data = pickle.dumps(item, protocol=4)
    except Exception:  # an object pickle refuses: its text stands for it
        data = repr(item).encode()
    return hashlib.blake2b(data, digest_size=8).hexdigest()
