"""Keep what a DataLoader loop collects out of shared memory.
Fixes scenario 08: "RuntimeError: Too many open files. Communication with the
workers is no longer possible. Please increase the limit using `ulimit -n`…",
raised by a loop that keeps the batches (or their labels) it receives.

With the default `file_descriptor` sharing strategy on Linux, every tensor a
worker sends to the training process arrives as a block of shared memory held
open by one file descriptor; the descriptor is closed only when the tensor is
freed.  A loop that keeps the batches it receives (collecting labels or
outputs for a metric at the end of an epoch) therefore holds one descriptor per
kept tensor, until `ulimit -n` is reached and the DataLoader gives up.

    for features, labels in loader:
        targets.append(copy_out_of_shared_memory(labels))   # not targets.append(labels)

* `copy_out_of_shared_memory(batch)` is the fix: keep copies, and the shared
  blocks (and their descriptors) are freed as soon as the loop moves on.
* `fd_soft_limit()` is the limit such a loop runs into (`ulimit -n`), to check
  against `len(os.listdir("/proc/self/fd"))` while it runs.
"""
from __future__ import annotations

import collections.abc
import resource

import torch


def copy_out_of_shared_memory(batch):
    """The same batch, with every tensor that lives in shared memory replaced by a
    private copy; other tensors and values are returned as they are.

    Works on what `default_collate` produces: tensors, and tuples, lists,
    named tuples and dicts of them, nested.  For one tensor it is `t.clone()`.
    """
    if isinstance(batch, torch.Tensor):
        return batch.clone() if batch.is_shared() else batch
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # a named tuple
        return type(batch)(*(copy_out_of_shared_memory(item) for item in batch))
    if isinstance(batch, (tuple, list)):
        return type(batch)(copy_out_of_shared_memory(item) for item in batch)
    if isinstance(batch, collections.abc.Mapping):
        return {key: copy_out_of_shared_memory(value) for key, value in batch.items()}
    return batch


def fd_soft_limit() -> int:
    """The limit `ulimit -n` shows: the most descriptors this process may hold."""
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]
