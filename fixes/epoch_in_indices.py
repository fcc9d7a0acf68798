"""EpochInIndices: the epoch travels into the DataLoader workers with every index.

Fixes scenario 14 (persistent workers never see the new epoch): with
`persistent_workers=True` the workers start once, at the first epoch, each holding its own
copy of the dataset (forked, or pickled under spawn/forkserver). `dataset.set_epoch(e)` in
the training loop changes the main process's copy only, so the workers go on producing
samples for the epoch they started in: a curriculum that never gets harder, an augmentation
schedule that never moves, a per-epoch seed that repeats.

The sampler is the part of a map-style DataLoader that runs in the main process every epoch
and whose output (the indices) is sent to the workers. So let each index carry the epoch:

    dataset = EpochInIndices(CurriculumDataset())     # anything with set_epoch() and [index]
    loader = DataLoader(dataset, sampler=dataset.sampler(), batch_size=16,
                        num_workers=2, persistent_workers=True)
    for epoch in range(epochs):
        dataset.set_epoch(epoch)                      # as before, before the `for batch`
        for batch in loader:
            ...

- `dataset.sampler(base)` wraps any sampler (default: every index in order; pass
  `RandomSampler(inner)` to shuffle, or a `DistributedSampler`) so that it yields
  `(epoch, index)`. It reads the epoch when the loader starts an epoch (`iter(loader)`,
  that is the `for`), and calls `base.set_epoch(epoch)` too where the base has one, as a
  DistributedSampler needs. For a batch sampler, wrap the sampler inside it:
  `BatchSampler(dataset.sampler(), batch_size=16, drop_last=False)`.
- Each worker's copy calls the wrapped dataset's own `set_epoch(epoch)` the first time it
  receives an index of a new epoch, then returns `dataset[index]`. A plain integer index
  reaching a worker (the sampler was not passed) raises a TypeError that says so, instead of
  silently using a stale epoch.
- Nothing is shared between processes: it works the same with fork, spawn and forkserver,
  with any number of workers, and with `num_workers=0` it returns what the plain dataset does.

The other way, a `multiprocessing.Value` that the main process writes and `__getitem__`
reads, works as well for an epoch set between epochs; it must exist before the workers
start, and every read of it is a read of shared memory under a lock.

One file, no project imports: copy it into your code base.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from torch.utils.data import Dataset, Sampler, get_worker_info

__all__ = ["EpochInIndices", "EpochSampler"]


class EpochInIndices(Dataset):
    """Wraps a map-style dataset with `set_epoch(epoch)`; takes `(epoch, index)` keys."""

    def __init__(self, dataset: Any):
        if not callable(getattr(dataset, "set_epoch", None)):
            raise TypeError(
                f"EpochInIndices wraps a dataset with a set_epoch(epoch) method; "
                f"{type(dataset).__name__} has none. Add one that stores what depends on the epoch.")
        self.dataset = dataset
        self.epoch: int | None = None  # the loop's epoch, as set in the main process
        self._applied: int | None = None  # the epoch this copy of `dataset` was last set to

    def set_epoch(self, epoch: int) -> None:
        """Call in the training loop before each epoch, as you would on the dataset itself."""
        self.epoch = epoch
        self._apply(epoch)  # the main process's copy too: num_workers=0, and code that reads it

    def _apply(self, epoch: int) -> None:
        if epoch != self._applied:
            self.dataset.set_epoch(epoch)
            self._applied = epoch

    def sampler(self, base: Iterable[int] | None = None) -> EpochSampler:
        """The sampler to give the DataLoader: `base`'s indices, each paired with the epoch."""
        return EpochSampler(self, range(len(self.dataset)) if base is None else base)

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, key):
        if isinstance(key, tuple) and len(key) == 2:
            epoch, index = key
            if epoch is not None:
                self._apply(epoch)
            return self.dataset[index]
        if get_worker_info() is not None:
            raise TypeError(
                f"EpochInIndices received the plain index {key!r} in a DataLoader worker, so it "
                "cannot know the epoch: pass sampler=dataset.sampler() (or "
                "batch_sampler=BatchSampler(dataset.sampler(), ...)) to the DataLoader.")
        return self.dataset[key]  # main process: this copy's epoch is the loop's

    def __getattr__(self, name: str):
        # Only reached for names the wrapper lacks. `dataset` itself is looked up in __dict__,
        # which is empty while pickle rebuilds the object: no forwarding then, no recursion.
        if name.startswith("__") or "dataset" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.__dict__["dataset"], name)


class EpochSampler(Sampler):
    """Yields `(epoch, index)` for each index of `base`; the epoch is its owner's at `iter()`."""

    def __init__(self, owner: EpochInIndices, base: Iterable[int]):
        self.owner, self.base = owner, base

    def __iter__(self) -> Iterator[tuple]:
        epoch = self.owner.epoch
        if epoch is not None and callable(getattr(self.base, "set_epoch", None)):
            self.base.set_epoch(epoch)
        for index in self.base:
            yield epoch, index

    def __len__(self) -> int:
        return len(self.base)  # type: ignore[arg-type]
