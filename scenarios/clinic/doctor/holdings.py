"""What the dataset holds: a walk over the objects a worker will read (how many Python objects,
and the ones that matter for workers: files, locks, generators, connections, pools), and the
source of the code a worker runs."""
from __future__ import annotations

import dataclasses
import functools
import inspect
import io
import random
import socket
import sqlite3
import sys
import threading
import time
import types
from collections import deque

WALK_BUDGET_S = 3.0       # the object walk stops counting after this and says so
SAMPLE_ABOVE = 2_000      # containers longer than this are counted from an even sample
SAMPLE_SIZE = 500
ONLY_BUFFERS_BELOW = 1_000  # Python objects beside the buffers: a dataset object and its attributes


_ATOMS = (int, float, complex, bool, str, bytes, type(None))
_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))
_CODE = (types.ModuleType, type, types.BuiltinFunctionType, types.MethodWrapperType,
         types.WrapperDescriptorType, types.MethodDescriptorType, types.GetSetDescriptorType,
         types.CodeType, types.FrameType)


@dataclasses.dataclass
class Holdings:
    """What a walk from the dataset (and collate_fn, worker_init_fn) found."""
    objects: float = 0            # Python objects, each with its own reference count
    object_bytes: float = 0       # their sizes (sys.getsizeof)
    biggest: str = ""             # the attribute holding most of the objects
    sampled: bool = False         # long containers counted from an even sample
    stopped: bool = False         # the walk ran out of time: figures are lower bounds
    found: list = dataclasses.field(default_factory=list)  # (kind, path, object)
    buffers: int = 0              # tensors and numpy arrays of numbers: read without a write

    @property
    def only_buffers(self) -> bool:
        """Its data is tensors or numpy arrays, beside a handful of Python objects (the dataset,
        its attributes): nothing whose reference count a worker's read writes (scenario 03)."""
        return self.buffers > 0 and self.objects < ONLY_BUFFERS_BELOW


# Connection objects of these libraries hold a socket or a file handle; some are C types that
# report their module as `builtins` (lmdb.Environment), so they are told by the library's own types.
CONNECTION_LIBRARIES = ("lmdb", "psycopg2", "psycopg", "pymongo", "redis", "pymysql", "boto3", "botocore")


def _is_connection(obj) -> bool:
    if isinstance(obj, sqlite3.Connection):
        return True
    module = (type(obj).__module__ or "").split(".")[0]
    if module in CONNECTION_LIBRARIES:
        return True
    for name in CONNECTION_LIBRARIES:
        library = sys.modules.get(name)
        if library is not None and type(obj) in _library_types(library):
            return True
    return False


@functools.cache
def _library_types(library) -> frozenset:
    return frozenset(v for v in vars(library).values() if isinstance(v, type))


def kind_of(obj) -> str | None:
    """What about this object matters for workers, or None."""
    module = type(obj).__module__ or ""
    if isinstance(obj, _LOCK_TYPES):
        return "lock"
    if isinstance(obj, io.IOBase):
        return None if obj.closed else "file"
    if isinstance(obj, socket.socket):
        return "socket" if obj.fileno() != -1 else None
    if _is_connection(obj):
        return "connection"
    if module.split(".")[0] == "h5py" and type(obj).__name__ in ("File", "Dataset", "Group"):
        return "hdf5"
    if isinstance(obj, random.Random) and not isinstance(obj, random.SystemRandom):
        return "rng"
    if module.startswith("numpy.random") and type(obj).__name__ in ("Generator", "RandomState"):
        return "rng"
    if module == "torch" and type(obj).__name__ == "Generator":
        return "rng"
    if module.split(".")[0] == "tokenizers" and type(obj).__name__ == "Tokenizer":
        return "tokenizer"
    if module in ("torch", "torch.nn.parameter") and type(obj).__name__ in ("Tensor", "Parameter") \
            and obj.device.type != "cpu":
        return "device-tensor"  # a worker cannot use it: CUDA is not usable after fork (scenario 25)
    if isinstance(obj, threading.Thread):
        return "thread"
    if module in ("multiprocessing.pool", "concurrent.futures.process", "concurrent.futures.thread") and \
            type(obj).__name__ in ("Pool", "ThreadPool", "ProcessPoolExecutor", "ThreadPoolExecutor"):
        return "pool"
    return None


def _children(obj, path: str):
    """(path, child) pairs of a container or an object's attributes; long containers sampled."""
    if isinstance(obj, dict):
        items = list(obj.items()) if len(obj) <= SAMPLE_ABOVE else _even(list(obj.items()))
        for key, value in items:
            yield None, key
            yield f"{path}[{repr(key)[:40]}]", value
    elif isinstance(obj, (list, tuple, deque)):
        indices = range(len(obj)) if len(obj) <= SAMPLE_ABOVE else _even(range(len(obj)))
        shown = f"{path}[…]" if len(obj) > 3 else None
        for i in indices:
            yield (shown or f"{path}[{i}]"), obj[i]
    elif isinstance(obj, (set, frozenset)):
        members = list(obj)
        for member in (members if len(members) <= SAMPLE_ABOVE else _even(members)):
            yield f"{path}{{…}}", member
    elif isinstance(obj, types.FunctionType):
        for name, cell in zip(obj.__code__.co_freevars, obj.__closure__ or ()):
            try:
                yield f"{path}.<{name} from its closure>", cell.cell_contents
            except ValueError:  # an empty cell
                continue
        for i, default in enumerate(obj.__defaults__ or ()):
            yield f"{path}.<default {i}>", default
    elif isinstance(obj, types.MethodType):
        yield f"{path}.__self__", obj.__self__
    else:
        attributes = getattr(obj, "__dict__", None)
        if isinstance(attributes, dict):
            for name, value in attributes.items():
                yield f"{path}.{name}", value
        for name in getattr(type(obj), "__slots__", ()):
            if isinstance(name, str) and hasattr(obj, name):
                yield f"{path}.{name}", getattr(obj, name)
        if attributes is None and not getattr(type(obj), "__slots__", None):
            import gc
            for child in gc.get_referents(obj):
                if not isinstance(child, _CODE):
                    yield f"{path}.<?>", child


def _even(sequence):
    step = len(sequence) / SAMPLE_SIZE
    return [sequence[int(i * step)] for i in range(SAMPLE_SIZE)]


class _Walk:
    """One walk: a stack of (object, path, weight, top) where weight > 1 stands for the members
    of a long container counted by sample, and top is the attribute the object hangs under."""

    def __init__(self, roots):
        self.held, self.seen, self.per_top = Holdings(), set(), {}
        self.stack = [(obj, path, 1.0, path) for path, obj in roots]

    def count(self, obj, weight: float, top: str) -> None:
        self.held.objects += weight
        self.held.object_bytes += sys.getsizeof(obj) * weight
        self.per_top[top] = self.per_top.get(top, 0) + weight

    def visit(self, obj, path: str, weight: float, top: str, np, torch) -> None:
        if isinstance(obj, _CODE):
            return
        kind = kind_of(obj)
        if kind:
            self.held.found.append((kind, path, obj))
            if kind in ("file", "socket", "connection", "hdf5", "lock", "thread", "pool"):
                return
        if isinstance(obj, torch.Tensor) or isinstance(obj, np.ndarray) and obj.dtype != object:
            self.held.buffers += 1
            return  # a buffer, read without writing to it
        if not isinstance(obj, (types.FunctionType, types.MethodType)):
            self.count(obj, weight, top)
        if isinstance(obj, np.ndarray):  # dtype=object: an array of Python objects
            members = obj.ravel()
            indices = range(len(members)) if len(members) <= SAMPLE_ABOVE else _even(range(len(members)))
            scale = weight * (len(members) / len(indices) if len(indices) else 1)
            self.held.sampled |= len(members) > SAMPLE_ABOVE
            self.stack += [(members[i], f"{path}[…]", scale, top) for i in indices]
            return
        length = len(obj) if isinstance(obj, (dict, list, tuple, deque, set, frozenset)) else 0
        scale = weight * (length / SAMPLE_SIZE if length > SAMPLE_ABOVE else 1)
        self.held.sampled |= length > SAMPLE_ABOVE
        for child_path, child in _children(obj, path):
            if id(child) in self.seen:
                continue
            if isinstance(child, _ATOMS):  # leaves are counted here, without a trip through the stack
                self.seen.add(id(child))
                self.count(child, scale, top)
                continue
            depth_top = top if top.count(".") >= 1 or child_path is None else child_path
            self.stack.append((child, child_path or path, scale, depth_top))


def walk(roots: list[tuple[str, object]], budget_s: float = WALK_BUDGET_S) -> Holdings:
    """Count the Python objects reachable from the roots, as a forked worker will read
    them, and note the ones that matter for workers (files, locks, generators, …)."""
    import numpy as np
    import torch

    state, deadline, steps = _Walk(roots), time.perf_counter() + budget_s, 0
    while state.stack:
        obj, path, weight, top = state.stack.pop()
        if id(obj) in state.seen:
            continue
        state.seen.add(id(obj))
        steps += 1
        if steps % 20_000 == 0 and time.perf_counter() > deadline:
            state.held.stopped = True
            break
        state.visit(obj, path, weight, top, np, torch)
    if state.per_top:
        state.held.biggest = max(state.per_top, key=state.per_top.get)
    return state.held


# ---------------------------------------------------------------- the code workers run

_LIBRARY_ROOTS = ("torch", "typing", "builtins", "collections", "_collections_abc", "abc", "numpy")


def code_sources(loader, depth: int = 3, own_only: bool = False) -> tuple[list[str], bool]:
    """The source of the code a worker runs for this loader: the dataset's own classes, its
    worker_init_fn and collate_fn, and the functions they call by name (a helper that splits a
    stream by worker, as webdataset's split_by_worker does), `depth` calls deep.  Returns the
    sources and whether some could not be read (a C extension, code typed at a prompt).
    own_only: the user's code alone, not an installed library's (whose classes also hold
    methods that run only in the main process, as datasets' map(num_proc=…) and its Pool)."""
    owners = [k for k in type(loader.dataset).__mro__ if k.__module__.split(".")[0] not in _LIBRARY_ROOTS]
    todo = [(o, 0) for o in owners + [f for f in (loader.worker_init_fn, loader.collate_fn) if f is not None]
            if not (getattr(o, "__module__", "") or "").startswith("torch.")]
    seen, sources, unreadable = set(), [], False
    while todo:
        owner, level = todo.pop()
        if id(owner) in seen:
            continue
        seen.add(id(owner))
        try:
            if own_only and _installed(inspect.getsourcefile(owner)):
                continue
            sources.append(inspect.getsource(owner))
        except (OSError, TypeError):
            unreadable = True
            continue
        if level < depth:
            todo += [(f, level + 1) for f in _called_functions(owner)]
    return sources, unreadable


def library_class(obj) -> bool:
    """Its class is an installed library's (datasets' IterableDataset, torch's TensorDataset): the
    state it writes as it iterates is the library's own bookkeeping, not the user's code."""
    return installed_class(type(obj))


def installed_class(cls: type) -> bool:
    """A class of Python itself or of an installed package, not of the user's code."""
    try:
        return _installed(inspect.getsourcefile(cls))
    except TypeError:  # a class of C code
        return True


def _installed(filename: str | None) -> bool:
    """Code of Python itself or of an installed package (site-packages, the interpreter's prefix)."""
    import sysconfig
    from pathlib import Path

    roots = {sysconfig.get_paths()[k] for k in ("stdlib", "purelib", "platlib")} | {sys.prefix, sys.base_prefix}
    where = str(Path(filename).resolve()) if filename else ""
    return not where or any(where.startswith(str(Path(r).resolve()) + "/") for r in roots)


def _called_functions(owner) -> list:
    """Functions a class's methods or a function refer to by a global name."""
    functions = [v for v in vars(owner).values() if isinstance(v, types.FunctionType)] if isinstance(owner, type) \
        else [owner] if isinstance(owner, types.FunctionType) else []
    found = []
    for function in functions:
        for name in function.__code__.co_names:
            value = function.__globals__.get(name)
            if isinstance(value, (types.FunctionType, type)) and \
                    (getattr(value, "__module__", "") or "").split(".")[0] not in _LIBRARY_ROOTS:
                found.append(value)
    return found


def public_name(obj) -> str:
    """numpy.random.Generator rather than numpy.random._generator.Generator; lmdb.Environment
    rather than builtins.Environment (a C type that does not name its module)."""
    module = type(obj).__module__.split("._")[0]
    if module == "builtins":
        module = next((name for name in CONNECTION_LIBRARIES if name in sys.modules
                       and type(obj) in _library_types(sys.modules[name])), module)
    return f"{module}.{type(obj).__qualname__}"
