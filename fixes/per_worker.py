"""PerWorker: a resource that each DataLoader worker builds for itself, on first use.
Fixes scenario 01 (fork-inherited lock: the training loop never starts).

`fork` copies the parent's memory, locks included, but only the thread that
called `fork`.  A lock that another thread of the parent (a cache refresher,
a metrics uploader, a connection pool's keep-alive) held at that moment stays
locked forever in the child: its owner does not exist there to release it.
The same goes for sockets, database connections and open files shared with
the parent.  So a dataset must not carry such an object into its workers; it
carries the recipe instead, and each process makes its own:

    self.labels = PerWorker(LabelCache, "labels.json")   # in __init__, main process
    self.labels.get()[key]                                # in __getitem__, any process

`get()` builds the object the first time it is called in a process and
builds a new one when it notices it runs in a different process than the one
that built it (a forked worker).  Pickling keeps only the recipe, so the same
dataset also works with `multiprocessing_context="spawn"` or `"forkserver"`,
as long as the factory and its arguments are picklable.
"""
from __future__ import annotations

import os
import pickle
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

# Guards first use when several threads of one process call get() at once.
# It is itself replaced after fork, for the very reason this module exists.
_creation_lock = threading.Lock()


def _new_creation_lock_in_child() -> None:
    global _creation_lock
    _creation_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_creation_lock_in_child)


class PerWorker(Generic[T]):
    """`factory(*args, **kwargs)`, called once per process, lazily."""

    def __init__(self, factory: Callable[..., T], *args: Any, **kwargs: Any):
        if not callable(factory):
            raise TypeError(
                f"PerWorker needs a factory (a class or function that builds the resource), "
                f"got {type(factory).__name__}; pass e.g. PerWorker(LabelCache) rather than "
                f"PerWorker(LabelCache())")
        self.factory, self.args, self.kwargs = factory, args, kwargs
        self._value: T | None = None
        self._owner_pid: int | None = None

    def get(self) -> T:
        """This process's own instance, built now if this process has none yet."""
        pid = os.getpid()
        if self._owner_pid != pid:
            with _creation_lock:
                if self._owner_pid != pid:
                    # The inherited instance (if any) belongs to the parent: leave it alone.
                    self._value = self.factory(*self.args, **self.kwargs)
                    self._owner_pid = pid
        return self._value  # type: ignore[return-value]

    @property
    def built_here(self) -> bool:
        """Whether this process already holds its own instance."""
        return self._owner_pid == os.getpid()

    def __getstate__(self) -> dict:
        recipe = (self.factory, self.args, self.kwargs)
        try:
            pickle.dumps(recipe)
        except Exception as err:
            raise TypeError(
                f"PerWorker({getattr(self.factory, '__qualname__', self.factory)!r}) cannot be "
                f"sent to a spawn/forkserver worker: {err}. Use a module-level class or "
                f"function and picklable arguments (no lambdas, locks or open files)") from err
        return {"factory": self.factory, "args": self.args, "kwargs": self.kwargs}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["factory"], *state["args"], **state["kwargs"])

    def __repr__(self) -> str:
        name = getattr(self.factory, "__qualname__", repr(self.factory))
        return f"PerWorker({name}, built_here={self.built_here})"
