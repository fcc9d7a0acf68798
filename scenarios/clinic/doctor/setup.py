"""The loader's configuration and this machine's, as the checks read them (Setup), and what a
check is handed (Examined): the loader, its setup and what its dataset holds."""
from __future__ import annotations

import dataclasses
import sys

from scenarios.host import default_start_method, usable_cores


@dataclasses.dataclass
class Setup:
    dataset: str
    samples: int | None
    batches: int | None         # per epoch, when the loader knows its length
    batch_size: int | None
    num_workers: int
    start_method: str | None    # fork | spawn | forkserver, None without workers
    start_method_from: str
    prefetch_factor: int | None
    pin_memory: bool
    persistent_workers: bool
    timeout: float
    iterable: bool
    usable_cores: int
    cores_from: str

    def line(self) -> str:
        parts = [f"{self.dataset}" + (f", {self.samples:,} samples" if self.samples is not None else ""),
                 f"batch_size {self.batch_size}",
                 f"{self.batches:,} batches per epoch" if self.batches is not None else "length unknown",
                 f"num_workers {self.num_workers}"]
        if self.num_workers:
            parts += [f"start method {self.start_method} ({self.start_method_from})",
                      f"prefetch_factor {self.prefetch_factor}"]
            if self.persistent_workers:
                parts.append("persistent workers")
        if self.pin_memory:
            parts.append("pin_memory")
        parts.append(f"{self.usable_cores} usable cores ({self.cores_from})")
        return " · ".join(parts)


def start_method_of(loader) -> tuple[str | None, str]:
    """The start method the loader's workers get, and why, read without fixing it."""
    if not loader.num_workers:
        return None, "no workers"
    if loader.multiprocessing_context is not None:
        return loader.multiprocessing_context.get_start_method(), "its multiprocessing_context"
    import multiprocessing
    if multiprocessing.get_start_method(allow_none=True):
        return multiprocessing.get_start_method(allow_none=True), "set_start_method() in this process"
    return default_start_method(), (f"the default of Python {sys.version_info[0]}.{sys.version_info[1]} "
                                     f"on {sys.platform}")


def describe(loader) -> Setup:
    from torch.utils.data import IterableDataset

    method, method_from = start_method_of(loader)
    try:
        samples = len(loader.dataset)
    except TypeError:
        samples = None
    try:
        batches = len(loader)
    except TypeError:
        batches = None
    cores, cores_from = usable_cores()
    return Setup(dataset=type(loader.dataset).__qualname__, samples=samples, batches=batches,
                 batch_size=loader.batch_size, num_workers=loader.num_workers, start_method=method,
                 start_method_from=method_from,
                 prefetch_factor=loader.prefetch_factor if loader.num_workers else None,
                 pin_memory=bool(loader.pin_memory), persistent_workers=bool(loader.persistent_workers),
                 timeout=float(loader.timeout), iterable=isinstance(loader.dataset, IterableDataset),
                 usable_cores=cores, cores_from=cores_from)


@dataclasses.dataclass
class Examined:
    """What every check's static part is handed."""
    loader: object
    setup: Setup
    holdings: object            # holdings.Holdings

    def found(self, kind: str) -> list:
        """(path, object) of each object of that kind the walk met (file, lock, rng, …)."""
        return [(path, obj) for k, path, obj in self.holdings.found if k == kind]

    @property
    def workers(self) -> int:
        return self.setup.num_workers

    @property
    def forked(self) -> bool:
        return self.setup.num_workers > 0 and self.setup.start_method == "fork"
