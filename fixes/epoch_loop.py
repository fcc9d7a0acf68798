"""epochs(loader, n): an epoch loop that cannot forget `set_epoch`.

Fixes scenario 15 (DistributedSampler without set_epoch: the same order every epoch).
A `DistributedSampler(shuffle=True)` shuffles with `seed + self.epoch`, and its epoch only
changes when the training loop calls `sampler.set_epoch(epoch)`. Forget that call and
every epoch repeats the first one's order on every rank, and each rank trains on the same
half of the data for the whole run. Nothing warns: the sampler still splits each epoch
correctly between the ranks. The call is one line, and easy to lose in a refactor, in a
resumed run, or when the sampler hides inside a batch sampler.

    from epoch_loop import epochs

    for epoch in epochs(loader, num_epochs):          # instead of range(num_epochs)
        for batch in loader:
            ...

- Before yielding each epoch, `set_epoch(loader, epoch)` calls `set_epoch(epoch)` on
  everything in the loader that has one: `loader.sampler`, `loader.batch_sampler`, the
  sampler inside a batch sampler (`.sampler`, followed through wrappers), and
  `loader.dataset` (streaming datasets that shuffle by epoch have one too). Each object
  once, in the main process, before the `for batch in loader` creates the epoch's
  iterator, which is when the sampler draws its order (also with persistent workers:
  the sampler never runs in a worker).
- `epochs(loader, n, start=k)` resumes at epoch k: the order of epoch k is the one an
  uninterrupted run would have used.
- It then checks every `DistributedSampler` it found: one whose `epoch` did not become the
  loop's epoch (a subclass whose `set_epoch` does not store it) raises a RuntimeError
  that names where it sits, instead of a run that silently repeats its order.
- A loader with no `set_epoch` anywhere (a plain `RandomSampler`, which draws a new order
  every epoch anyway) is left alone.

One file, no project imports: copy it into your code base.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from torch.utils.data.distributed import DistributedSampler

__all__ = ["epochs", "set_epoch"]

_FOLLOWED = ("sampler", "batch_sampler")  # attributes through which samplers wrap samplers


def _holders(loader: Any) -> Iterator[tuple[str, Any]]:
    """(where, object) for the loader's samplers, the samplers they wrap, and the dataset."""
    seen: set[int] = set()
    pending = [(f"loader.{name}", getattr(loader, name, None)) for name in _FOLLOWED]
    while pending:
        where, thing = pending.pop(0)
        if thing is None or id(thing) in seen or len(seen) > 32:
            continue
        seen.add(id(thing))
        yield where, thing
        pending += [(f"{where}.{name}", getattr(thing, name, None)) for name in _FOLLOWED]
    dataset = getattr(loader, "dataset", None)
    if dataset is not None and id(dataset) not in seen:
        yield "loader.dataset", dataset


def set_epoch(loader: Any, epoch: int) -> list[str]:
    """Call set_epoch(epoch) on whatever in `loader` has one; return where it was called."""
    called, distributed = [], []
    for where, thing in _holders(loader):
        if callable(getattr(thing, "set_epoch", None)):
            thing.set_epoch(epoch)
            called.append(where)
        if isinstance(thing, DistributedSampler):
            distributed.append((where, thing))
    for where, sampler in distributed:
        if sampler.epoch != epoch:
            raise RuntimeError(
                f"{where} is a {type(sampler).__name__} whose epoch is still {sampler.epoch} after "
                f"set_epoch({epoch}): every epoch would repeat the same order. Make its "
                "set_epoch store the epoch (call DistributedSampler.set_epoch via super()).")
    return called


def epochs(loader: Any, count: int, start: int = 0) -> Iterator[int]:
    """Yield epochs start .. start+count-1, each after set_epoch(loader, epoch)."""
    if not any(hasattr(loader, name) for name in (*_FOLLOWED, "dataset")):
        raise TypeError(f"epochs() takes the DataLoader itself, not {type(loader).__name__}: "
                        "it sets the epoch on the loader's sampler before each epoch")
    for epoch in range(start, start + count):
        set_epoch(loader, epoch)
        yield epoch
