"""The probe's own loaders: the user's dataset, sampling and collation under another number of
workers (compare and draws stages of probe_child.py), and errors of their making told apart
from the user's."""
from __future__ import annotations

import os
import traceback
from pathlib import Path

from torch.utils.data import DataLoader, IterableDataset


def copy_of(loader: DataLoader, num_workers: int, **changes) -> DataLoader:
    """The same dataset, sampling and collation, with another number of workers; only what that configuration
    accepts is copied (num_workers=0 refuses a timeout, a prefetch_factor, persistent workers)."""
    options = dict(num_workers=num_workers, collate_fn=loader.collate_fn,
                   worker_init_fn=loader.worker_init_fn, generator=loader.generator)
    if num_workers:
        options.update(multiprocessing_context=loader.multiprocessing_context, timeout=loader.timeout,
                       prefetch_factor=loader.prefetch_factor or 2,
                       persistent_workers=loader.persistent_workers)
    if isinstance(loader.dataset, IterableDataset):
        options.update(batch_size=loader.batch_size, drop_last=loader.drop_last)
    elif loader.batch_sampler is not None:
        options.update(batch_sampler=loader.batch_sampler)
    else:
        options.update(batch_size=None, sampler=loader.sampler)
    options.update(changes)
    return DataLoader(loader.dataset, **options)


def shut_down(iterator) -> None:
    # Persistent workers outlive the iterator object; the probe needs them no more.
    shutdown = getattr(iterator, "_shutdown_workers", None)
    if shutdown:
        shutdown()


def doctor_made(make):
    """Start one of the doctor's own loaders (`make()` returns its iterator).  An error there whose every frame
    is the probe's or torch's DataLoader machinery is of the doctor's making: marked so, never the user's data."""
    try:
        return make()
    except Exception as err:
        mine = (str(Path(__file__).parent), f"torch{os.sep}utils{os.sep}data")
        frames = traceback.extract_tb(err.__traceback__)
        err.clinic_own = bool(frames) and all(any(part in f.filename for part in mine) for f in frames)
        raise
