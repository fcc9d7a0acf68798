"""check_spawn_safe: find, in the main process, what spawned DataLoader workers
could not receive.  Fixes scenario 09 (fork vs spawn: the pitfalls of the fix):
"Can't pickle local object …", "Can't get attribute … on <module '__main__'>"
and the "DataLoader worker (pid(s) …) exited unexpectedly" that follows them.

With `multiprocessing_context="spawn"` (the default on macOS and Windows) each
worker is a fresh interpreter.  With `"forkserver"` (Linux's default from
Python 3.14) it is forked from a server process that was started clean, not
from the training process.  Either way nothing of the parent's memory comes
along: the worker gets the dataset, `collate_fn` and `worker_init_fn` by
pickle, and before unpickling them it runs the main script again under the
name `__mp_main__` (under forkserver too: checked on Python 3.11 and 3.13), so
that names defined there can be found.  Pickle sends functions and classes by
name: the worker imports their module and looks the name up.  So three things
that fork tolerated now fail, and two of them fail inside the worker, where the
traceback is easy to miss (a notebook shows only "DataLoader worker (pid(s) …)
exited unexpectedly"):

- a lambda, or a function or class defined inside another function: it has
  no importable name, pickling fails in the main process
  ("Can't pickle local object 'main.<locals>.<lambda>'");
- a class or function defined in a notebook, `python -c` or a REPL: it lives
  in a `__main__` with no file, which the worker cannot import
  ("Can't get attribute 'X' on <module '__main__' (built-in)>");
- a class or function defined under `if __name__ == "__main__":` of a script:
  the worker imports the script as `__mp_main__`, skips the guarded block and
  does not find it ("Can't get attribute 'X' on <module '__mp_main__' …>").

`check_spawn_safe(loader)` pickles what the workers would receive, without
copying tensor or array data, and raises `SpawnSafetyError` naming the
attribute at fault and what to do:

    loader = DataLoader(dataset, num_workers=4, multiprocessing_context="spawn")
    check_spawn_safe(loader)   # before the first epoch; cheap, no worker started

It does not catch the other classic, a script without the main guard: that
one fails while the worker runs the script again, and Python's own message
("…before the current process has finished its bootstrapping phase…") says
what to do.
"""
from __future__ import annotations

import ast
import functools
import io
import multiprocessing.context
import multiprocessing.reduction
import pickle
import sys
import types
from collections.abc import Iterator
from typing import Any

__all__ = ["SpawnSafetyError", "check_spawn_safe"]

# What a worker receives: torch.utils.data._utils.worker._worker_loop's arguments.
_SENT_TO_WORKERS = ("dataset", "collate_fn", "worker_init_fn")
_MAX_DEPTH = 8


class SpawnSafetyError(TypeError):
    """Something a spawned DataLoader worker needs cannot reach it.  `culprit`: what, and why,
    without the advice that follows it in the message."""

    def __init__(self, message: str, culprit: str = ""):
        super().__init__(message)
        self.culprit = culprit or message


class _NullWriter(io.RawIOBase):
    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        return len(data)


def _skip_data() -> None:
    return None


class _ProbePickler(multiprocessing.reduction.ForkingPickler):
    """Pickles into nothing, as a worker's start does (multiprocessing's own reductions for its
    locks, queues, shared values and connections included), skips bulk data, and notes every
    object named from __main__."""

    def __init__(self):
        super().__init__(_NullWriter(), pickle.HIGHEST_PROTOCOL)
        self.from_main: list[Any] = []

    def reducer_override(self, obj):
        if _is_bulk_data(obj):
            return _skip_data, ()
        if isinstance(obj, (type, types.FunctionType)) and getattr(obj, "__module__", None) == "__main__":
            self.from_main.append(obj)
        return NotImplemented


def _is_bulk_data(obj) -> bool:
    # Tensors and storages too: pickled for real, torch's reductions would move them to shared memory.
    kind = type(obj)
    return (kind.__module__, kind.__name__) in {("numpy", "ndarray"), ("torch", "Tensor")} or (
        kind.__module__.startswith("torch") and (
            (kind.__name__.endswith("Tensor") and hasattr(obj, "untyped_storage"))
            or kind.__name__.endswith("Storage")))


class _StartingWorker:
    """Stands for the worker being started: multiprocessing's Lock, Queue and Value pickle
    only while a process starts (and a Lock only if made with a spawn-like context); what
    holds a descriptor hands it over through the process being started."""

    def duplicate_for_child(self, fd: int) -> int:
        return fd

    def DupFd(self, fd: int) -> int:  # the name multiprocessing calls
        return fd


def _probe(obj) -> tuple[Exception | None, list[Any]]:
    pickler = _ProbePickler()
    multiprocessing.context.set_spawning_popen(_StartingWorker())
    try:
        pickler.dump(obj)
    except Exception as err:  # pickle raises AttributeError, TypeError or PicklingError
        return err, pickler.from_main
    finally:
        multiprocessing.context.set_spawning_popen(None)
    return None, pickler.from_main


def _parts(obj) -> Iterator[tuple[str, Any]]:
    """The (path suffix, value) pairs a pickle of `obj` is made of."""
    if isinstance(obj, functools.partial):
        yield ".func", obj.func
        for i, arg in enumerate(obj.args):
            yield f".args[{i}]", arg
        for key, value in obj.keywords.items():
            yield f".keywords[{key!r}]", value
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield f"[{key!r}]", value
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for i, value in enumerate(obj):
            yield f"[{i}]", value
    elif not isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
        for key, value in getattr(obj, "__dict__", {}).items():
            yield f".{key}", value


def _culprit(obj, path: str, depth: int = 0) -> tuple[str, Any]:
    """Descend into the first part that fails to pickle; the deepest such part is at fault."""
    if depth < _MAX_DEPTH:
        for suffix, part in _parts(obj):
            if _probe(part)[0] is not None:
                return _culprit(part, path + suffix, depth + 1)
    return path, obj


def _defined_only_under_main_guard(name: str) -> bool:
    """Is `name` bound in the __main__ script only inside `if __name__ == "__main__":`?"""
    path = getattr(sys.modules.get("__main__"), "__file__", None)
    try:
        tree = ast.parse(open(path, encoding="utf-8").read())
    except (OSError, SyntaxError, TypeError, ValueError):
        return False

    def is_guard(node) -> bool:
        return (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
                and "__name__" in ast.unparse(node.test) and "__main__" in ast.unparse(node.test))

    def binds(nodes, inside_guard: bool) -> set[bool]:
        found = set()
        for node in nodes:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                found.add(inside_guard)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom)):
                targets = (node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)])
                names = {getattr(t, "id", None) for t in targets}
                names |= {(a.asname or a.name).split(".")[0] for a in getattr(node, "names", [])}
                if name in names:
                    found.add(inside_guard)
            for block in ("body", "orelse", "handlers", "finalbody"):
                children = getattr(node, block, None)
                own_scope = isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                if isinstance(children, list) and not own_scope:
                    found |= binds(children, inside_guard or (block == "body" and is_guard(node)))
        return found

    where = binds(tree.body, False)
    return where == {True}


def _main_problem(obj) -> str | None:
    main = sys.modules.get("__main__")
    name = getattr(obj, "__qualname__", repr(obj))
    if getattr(main, "__spec__", None) is None and not getattr(main, "__file__", None):
        return (f"{name}, which is defined in an interactive __main__ (a notebook cell, `python -c`, a REPL), "
                f"which spawned workers cannot import, so they fail with \"Can't get attribute "
                f"'{name}' on <module '__main__' (built-in)>\". Move it into a .py module next to "
                f"the notebook and import it from there.")
    if _defined_only_under_main_guard(name):
        return (f"{name}, which is defined inside `if __name__ == \"__main__\":`; a spawned worker imports "
                f"the script as __mp_main__, skips that block and fails with \"Can't get attribute "
                f"'{name}' on <module '__mp_main__' …>\". Define it at the top level of the module.")
    return None


def check_spawn_safe(loader_or_object: Any, name: str = "loader") -> None:
    """Raise SpawnSafetyError if spawned workers could not receive what this loader sends them.

    Accepts a DataLoader (checks its dataset, collate_fn and worker_init_fn) or any
    object (checks it whole).  Returns None when everything would arrive.
    """
    if all(hasattr(loader_or_object, attr) for attr in _SENT_TO_WORKERS):
        items = [(f"{name}.{attr}", getattr(loader_or_object, attr)) for attr in _SENT_TO_WORKERS]
    else:
        items = [(name, loader_or_object)]
    for path, value in items:
        error, from_main = _probe(value)
        if error is not None:
            where, obj = _culprit(value, path)
            label = getattr(obj, "__qualname__", type(obj).__qualname__)
            culprit = (f"{where} ({label}) cannot be pickled, so spawned DataLoader workers cannot receive "
                       f"it: {type(error).__name__}: {error}")
            raise SpawnSafetyError(
                f"{culprit}. Define functions and classes at the top "
                f"level of a module (a `def` or a class with `__call__` instead of a lambda) and "
                f"bind their parameters with functools.partial or attributes; or open "
                f"unpicklable resources (files, connections, locks) inside the worker.", culprit
            ) from error
        for obj in from_main:
            problem = _main_problem(obj)
            if problem:
                raise SpawnSafetyError(f"{path} uses {problem}")
