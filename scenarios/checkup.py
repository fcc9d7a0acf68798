"""The doctor for your own DataLoader: from your code to the scenario that explains it.

    python -m scenarios doctor path/to/train.py:make_loader [--json] [--no-probe]
    make doctor LOADER=path/to/train.py:make_loader

    from scenarios.checkup import examine      # in a notebook, on a loader object
    examine(loader)

The function is called without arguments and must return a DataLoader.  Nothing of
it is changed.  The static checks only read the loader, its dataset and this process
(threads, /dev/shm, limits); whatever runs your `__getitem__` runs in the probe: a
child process that builds the loader again (your function called once more, or the
loader unpickled) and iterates a few batches with your configuration, under a hard
limit, supervised like every scenario script (supervise.py kills and reaps the whole
tree and shows the stacks on a hang).  Each finding names the scenario that explains
it, a level (`risk`: will break or waste at this configuration; `note`: worth
knowing), the measured evidence, the fix and the scenario's README.

Exit status (scenarios/host.py): 0 no risk, 1 risks found, 2 bad input (no such
file or function, not a DataLoader, an exception in your file), 3 cannot run here.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import io
import json
import multiprocessing
import os
import pickle
import random
import re
import shutil
import signal
import socket
import sqlite3
import sys
import sysconfig
import tempfile
import threading
import time
import traceback
import types
from collections import deque
from pathlib import Path

from scenarios.declarations import REPO_ROOT, SCENARIOS_DIR
from scenarios.host import (
    EXIT_BAD_INPUT,
    EXIT_CANNOT_RUN,
    EXIT_NOT_AS_EXPECTED,
    EXIT_OK,
)

MIB = 2**20
PROBE_LIMIT_S = 15.0      # the probe's measuring time, and the most a hanging loader costs
BUILD_LIMIT_S = 120.0     # the most your function may take to return the loader
WALK_BUDGET_S = 3.0       # the object walk stops counting after this and says so
COPY_RISK_MB = 50         # per worker, what scenario 03's broken.py allows itself
SAMPLE_ABOVE = 2_000      # containers longer than this are counted from an even sample
SAMPLE_SIZE = 500
EVENT_PREFIX = "checkup-probe "

PER_WORKER_FIX = ("fixes/per_worker.py (PerWorker(factory): each worker builds its own object, lock or "
                  "connection included, on first use); or multiprocessing_context='forkserver' (then check "
                  "pickling, scenario 09)")
RESEED_FIX = ("re-seed it per worker in worker_init_fn from torch.utils.data.get_worker_info().seed, or draw from "
              "torch's global generator, which PyTorch seeds per worker and epoch")
SPLIT_FIX = ("split the stream by worker in __iter__: info = torch.utils.data.get_worker_info(); take every "
             "info.num_workers-th item starting at info.id (or shard the files by worker)")
PACKED_FIX = ("fixes/packed_records.py (PackedRecords: the records in one numpy buffer), or keep the index in "
              "numpy arrays or tensors instead of lists of dicts and strings")
OPEN_FILES_FIX = "fixes/open_files.py (copy_out_of_shared_memory(batch) for what the loop keeps), or raise `ulimit -n`"
# The change each check asks for: a fixes/ module where one exists.
FIXES = {
    "copy-on-read": PACKED_FIX,
    "open-handles": "fixes/per_worker_file.py (PerWorkerFile: each worker opens its own descriptor and reads "
                    "with os.pread), or open the file on first use in __getitem__",
    "open-connection": PER_WORKER_FIX,
    "hdf5-handle": "open the h5py.File in each worker on first use (fixes/per_worker.py: PerWorker(h5py.File, "
                   "path, 'r')), never in __init__",
    "threads-and-locks": PER_WORKER_FIX,
    "threads-at-fork": "start threads after the loader's workers exist (persistent_workers=True), or "
                       "multiprocessing_context='forkserver'",
    "pickle-for-workers": "fixes/spawn_safe.py (check_spawn_safe(loader) names the culprit); define functions and "
                          "classes at module level, open resources inside the worker, keep the script's work under "
                          "`if __name__ == \"__main__\":`",
    "start-method-3.14": "say multiprocessing_context='fork' if the loader needs fork, or make it picklable "
                         "(fixes/spawn_safe.py names what is not)",
    "pool-on-dataset": "create the pool inside the worker, as a thread pool (concurrent.futures.ThreadPoolExecutor): "
                       "a worker is a daemon process and may not start processes of its own",
    "pool-in-worker": "use a thread pool inside the worker (concurrent.futures.ThreadPoolExecutor), or more "
                      "DataLoader workers instead of a pool in each; a worker is a daemon process",
    "rng-on-dataset": RESEED_FIX,
    "repeated-draws": RESEED_FIX,
    "iterable-worker-split": SPLIT_FIX,
    "duplicate-batches": SPLIT_FIX,
    "persistent-epoch-state": "pass the epoch with each index (a Sampler yielding (index, epoch)), or share it (a "
                              "tensor after .share_memory_(), a multiprocessing.Value) and read it in __getitem__, "
                              "or persistent_workers=False",
    "distributed-set-epoch": "call loader.sampler.set_epoch(epoch) at the start of every epoch, before iterating",
    "workers-vs-cores": "num_workers at most the usable cores for CPU-bound loading; more only for loading "
                        "that waits on I/O",
    "timeout": "DataLoader(timeout=…) above your slowest healthy batch turns the wait into an error; a detector, "
               "not a fix (scenario 01's myth_timeout.py)",
    "shm-leak": "keep the default file_descriptor strategy and raise `ulimit -n`, or copy kept batches "
                "(fixes/open_files.py: copy_out_of_shared_memory); remove torch_* files of dead jobs",
    "hang": "if the stack shows a lock: " + PER_WORKER_FIX + "; if it shows a queue put: /dev/shm is full "
            "(scenario 04)",
    "variable-size-batch": "give the DataLoader a collate_fn that pads (torch.nn.utils.rnn.pad_sequence) or "
                           "returns a list, or resize every sample to one shape in the transform",
    "shm-in-flight": "fixes/memory_in_flight.py (plan_in_flight lowers prefetch_factor, then num_workers, to fit "
                     "the free /dev/shm), or a larger /dev/shm (docker run --shm-size=…)",
    "memory-in-flight": "fixes/memory_in_flight.py (plan_in_flight(…, memory_budget_mb=…) sizes prefetch_factor "
                        "and num_workers to a budget); fixes/packed_records.py if workers grow (scenario 03)",
    "descriptor-budget": OPEN_FILES_FIX,
    "worker-crash": "fixes/native_crash.py (CrashTrail shows the worker's Python stack and last sample; check_span "
                    "before native code trusts a header); with num_workers=0 the crash happens in your process, "
                    "where faulthandler can show it",
    "lock-context": "make the lock (or Value, Queue) with the loader's own context: "
                    "ctx = multiprocessing.get_context(method); ctx.Lock(), and pass multiprocessing_context=ctx",
    "tensors-at-worker-start": "keep the dataset's tensors in one flat tensor (or a numpy array) and slice it: "
                               "under spawn and forkserver each tensor travels to a new worker as one descriptor, "
                               "and a process start takes at most 256",
    "worker-error": "fixes/bad_samples.py (SkipBadSamples + collate_good_samples turn a bad sample into a reported "
                    "event), or repair the data first (scan_images)",
    "spawn-start-up": "persistent_workers=True pays the start-up once per run instead of once per epoch",
    "state-written-in-getitem": "keep state that must be shared in the main process (a Sampler: "
                                "fixes/instance_draws.py), or in shared memory with a lock",
    "workers-slower": "fewer workers or bigger batches; with so little work per batch, num_workers=0 or 1 may be best",
    "loading-waits": "num_workers=2 or more (up to the usable cores, beyond them while loading waits on I/O)",
}


class BadInput(Exception):
    """Reported as one line on stderr with EXIT_BAD_INPUT, never a traceback."""


@dataclasses.dataclass
class Finding:
    scenario: str          # "03"
    level: str             # "risk" | "note"
    check: str             # a short name, e.g. "copy-on-read"
    evidence: str          # what was measured or read, with figures
    fix: str = ""          # a fixes/ module or the change to make (default: FIXES[check])
    details: str = ""      # shown in the text report only (stacks of a hang)

    def __post_init__(self):
        self.fix = self.fix or FIXES[self.check]

    @property
    def readme(self) -> str:
        """The scenario's README, found now: a scenario may be written after the doctor."""
        found = sorted(SCENARIOS_DIR.glob(f"{self.scenario}_*/README.md"))
        return found[0].relative_to(REPO_ROOT).as_posix() if found else f"scenario {self.scenario} (being written)"

    def as_dict(self) -> dict:
        return {"scenario": self.scenario, "level": self.level, "check": self.check,
                "evidence": _readable(self.evidence), "fix": self.fix, "readme": self.readme}


def _readable(text: str) -> str:
    """The paths of this machine as a reader's own would read (supervise.readable_paths), and
    without the probe's temporary folder or the interpreter's installation."""
    from scenarios.supervise import readable_paths
    text = re.sub(re.escape(tempfile.gettempdir()) + r"/clinic-checkup-[^/\s]+/", "", readable_paths(text))
    for prefix in {sys.base_prefix, os.path.realpath(sys.base_prefix)}:
        text = text.replace(os.path.join(prefix, "bin", ""), "")
    return text


class Findings(list):
    """What `examine()` returns: a list of Finding that prints as the doctor's report."""

    def __init__(self, findings=(), setup=None, probe_status: str = "", header: str = ""):
        super().__init__(findings)
        self.setup, self.probe_status, self.header = setup, probe_status, header
        self.seconds: float | None = None      # what the examination took
        self.probe: ProbeResult | None = None

    @property
    def risks(self) -> list[Finding]:
        return [f for f in self if f.level == "risk"]

    def __str__(self) -> str:
        return format_report(self)

    def _repr_pretty_(self, printer, cycle):  # IPython/Jupyter show the report
        printer.text(format_report(self))


# ---------------------------------------------------------------- your file and function


def _shown(path) -> str:
    """A path as the user would type it: relative to the current folder when inside it."""
    try:
        return os.path.relpath(path) if not os.path.relpath(path).startswith("..") else str(path)
    except ValueError:
        return str(path)


_NOT_THEIRS = tuple(str(Path(p).resolve()) for p in {
    sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
    SCENARIOS_DIR, sys.prefix, sys.base_prefix})


def _is_theirs(filename: str) -> bool:
    """A frame of the user's code: not Python's, not an installed package's, not the clinic's.
    Also for paths as the probe's output shows them (supervise.readable_paths)."""
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}/"
    if filename.startswith(("<", "site-packages/", version, "scenarios/")):
        return False
    path = Path(filename) if os.path.isabs(filename) else REPO_ROOT / filename
    return not str(path.resolve()).startswith(_NOT_THEIRS)


def _as_theirs(err: BaseException, doing: str) -> str:
    """'their/file.py, line 12, in make_loader: KeyError: 'x' (…)': the deepest frame of
    the user's own code, and their message."""
    frames = traceback.extract_tb(err.__traceback__)
    theirs = [f for f in frames if _is_theirs(f.filename)]
    frame = theirs[-1] if theirs else (frames[-1] if frames else None)
    message = traceback.format_exception_only(err)[-1].strip()
    where = f"{_shown(frame.filename)}, line {frame.lineno}, in {frame.name}: " if frame else ""
    return f"{where}{message} (raised {doing})"


def _import_user_file(path: Path) -> types.ModuleType:
    # Imported under its own name, with its folder first on sys.path, as `python file.py`
    # would see its neighbours; spawned workers need both to find its classes again.
    folder = str(path.parent.resolve())
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = path.stem if path.stem.isidentifier() else "doctor_target"
    existing = sys.modules.get(name)
    if existing is not None and Path(getattr(existing, "__file__", "") or "").resolve() != path.resolve():
        name = f"doctor_{path.stem}_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise BadInput(f"{_shown(path)} is not a Python file that can be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    argv, sys.argv = sys.argv, [str(path)]  # a file that parses arguments at import sees only its name
    try:
        spec.loader.exec_module(module)
    except SyntaxError as err:
        sys.modules.pop(name, None)
        raise BadInput(f"{_shown(err.filename or path)}, line {err.lineno}: SyntaxError: {err.msg} "
                       f"(while importing {_shown(path)})") from None
    except (Exception, SystemExit) as err:
        sys.modules.pop(name, None)
        raise BadInput(_as_theirs(err, f"while importing {_shown(path)}")) from None
    finally:
        sys.argv = argv
    return module


class _TooSlow(BaseException):
    pass


def _call_with_limit(function, limit_s: float):
    """Call it; in the main thread, a SIGALRM ends it after limit_s (a function that waits
    on a network share or a lock must not hang the doctor)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        return function()

    def too_slow(signum, frame):
        raise _TooSlow()
    previous = signal.signal(signal.SIGALRM, too_slow)
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    try:
        return function()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def load_loader(target: str, limit_s: float = BUILD_LIMIT_S):
    """Import FILE.py and call FUNCTION() from "FILE.py:FUNCTION"; return (loader, seconds)."""
    from torch.utils.data import DataLoader

    path_text, colon, name = target.rpartition(":")
    if not colon or not path_text or not name:
        raise BadInput(f"expected FILE.py:FUNCTION (e.g. train.py:make_loader), got {target!r}")
    path = Path(path_text).expanduser()
    if not path.is_file():
        raise BadInput(f"no such file: {path_text}")
    try:
        module = _call_with_limit(lambda: _import_user_file(path), limit_s)
    except _TooSlow:
        raise BadInput(f"importing {path_text} took more than {limit_s:.0f} s") from None
    function = getattr(module, name, None)
    if function is None:
        defined = [n for n, v in vars(module).items()
                   if inspect.isfunction(v) and v.__module__ == module.__name__ and not n.startswith("_")]
        raise BadInput(f"{path_text} has no function {name!r}"
                       + (f"; it defines: {', '.join(defined)}" if defined else ""))
    if not callable(function):
        raise BadInput(f"{path_text}:{name} is a {type(function).__name__}, not a function to call")
    started = time.perf_counter()
    argv, sys.argv = sys.argv, [str(path)]
    try:
        loader = _call_with_limit(function, limit_s)
    except _TooSlow:
        raise BadInput(f"{path_text}:{name}() did not return a loader within {limit_s:.0f} s") from None
    except (Exception, SystemExit) as err:
        raise BadInput(_as_theirs(err, f"by {name}()")) from None
    finally:
        sys.argv = argv
    if not isinstance(loader, DataLoader):
        raise BadInput(f"{path_text}:{name}() returned {type(loader).__module__}.{type(loader).__qualname__}, "
                       "not a torch.utils.data.DataLoader")
    return loader, time.perf_counter() - started


# ---------------------------------------------------------------- the loader and this machine


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


def _start_method(loader) -> tuple[str | None, str]:
    """The start method the loader's workers get, and why, read without fixing it (calling
    multiprocessing.get_start_method() would set the default for the whole process)."""
    if not loader.num_workers:
        return None, "no workers"
    if loader.multiprocessing_context is not None:
        return loader.multiprocessing_context.get_start_method(), "its multiprocessing_context"
    if multiprocessing.get_start_method(allow_none=True):
        return multiprocessing.get_start_method(allow_none=True), "set_start_method() in this process"
    default = multiprocessing.context._default_context._default_context._name
    return default, f"the default of Python {sys.version_info[0]}.{sys.version_info[1]} on {sys.platform}"


def _cgroup(v2_name: str, v1_name: str) -> Path | None:
    """This process's cgroup file (v2, or v1 as `controller/file`), most specific first."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    controller, v1_file = v1_name.split("/")
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "" or controller in controllers.split(","):
            base, name = Path("/sys/fs/cgroup", controllers), v2_name if controllers == "" else v1_file
            for candidate in (base / path.lstrip("/") / name, base / name):
                if candidate.is_file():
                    return candidate
    return None


def _read_ints(path: Path | None, *neighbours: str) -> list[int] | None:
    """The numbers in a cgroup file (and in files beside it); None for 'max', -1 or unreadable."""
    try:
        words = path.read_text().split() + [path.with_name(n).read_text().strip() for n in neighbours]
        numbers = [int(w) for w in words]
    except (AttributeError, OSError, ValueError):
        return None
    return None if numbers[0] < 0 or numbers[0] >= 2**60 else numbers


def usable_cores() -> tuple[int, str]:
    """Cores this process may run on: its CPU affinity, and a container's CPU quota."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    source = "CPU affinity" if hasattr(os, "sched_getaffinity") else "os.cpu_count()"
    quota_file = _cgroup("cpu.max", "cpu/cpu.cfs_quota_us")
    quota = _read_ints(quota_file, *(() if quota_file is None or quota_file.name == "cpu.max"
                                     else ("cpu.cfs_period_us",)))
    if quota and len(quota) == 2 and quota[0] / quota[1] < cores:
        return max(1, quota[0] // quota[1]), f"container CPU quota {quota[0] / quota[1]:g}"
    return cores, source


def memory_headroom() -> tuple[int, str]:
    """Bytes this job may still take: the RAM the kernel calls available, or less where a
    cgroup (a container, a Slurm job) limits it."""
    import psutil
    available = psutil.virtual_memory().available
    limit_file = _cgroup("memory.max", "memory/memory.limit_in_bytes")
    usage = "memory.current" if limit_file is not None and limit_file.name == "memory.max" else "memory.usage_in_bytes"
    limit = _read_ints(limit_file, usage)
    if limit and limit[0] - limit[1] < available:
        return max(limit[0] - limit[1], 0), f"left under the cgroup limit of {limit[0] / MIB:,.0f} MB"
    return available, "RAM available"


def describe(loader) -> Setup:
    from torch.utils.data import IterableDataset

    method, method_from = _start_method(loader)
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


# ---------------------------------------------------------------- what the dataset holds


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


def _kind(obj) -> str | None:
    """What about this object matters for workers, or None."""
    module = type(obj).__module__ or ""
    if isinstance(obj, _LOCK_TYPES):
        return "lock"
    if isinstance(obj, io.IOBase):
        return None if obj.closed else "file"
    if isinstance(obj, socket.socket):
        return "socket" if obj.fileno() != -1 else None
    if isinstance(obj, sqlite3.Connection) or module.split(".")[0] in ("lmdb", "psycopg2", "psycopg", "pymongo"):
        return "connection"
    if module.split(".")[0] == "h5py" and type(obj).__name__ in ("File", "Dataset", "Group"):
        return "hdf5"
    if isinstance(obj, random.Random) and not isinstance(obj, random.SystemRandom):
        return "rng"
    if module.startswith("numpy.random") and type(obj).__name__ in ("Generator", "RandomState"):
        return "rng"
    if module == "torch" and type(obj).__name__ == "Generator":
        return "rng"
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


def walk(roots: list[tuple[str, object]], budget_s: float = WALK_BUDGET_S) -> Holdings:
    """Count the Python objects reachable from the roots, as a forked worker will read
    them, and note the ones that matter for workers (files, locks, generators, …)."""
    import numpy as np
    import torch

    held = Holdings()
    seen: set[int] = set()
    deadline = time.perf_counter() + budget_s
    per_top: dict[str, float] = {}
    # (object, path, weight): weight > 1 for the members of a long container counted by sample.
    stack = [(obj, path, 1.0, path) for path, obj in roots]
    steps = 0
    while stack:
        obj, path, weight, top = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        steps += 1
        if steps % 20_000 == 0 and time.perf_counter() > deadline:
            held.stopped = True
            break
        if isinstance(obj, _CODE):
            continue
        kind = _kind(obj)
        if kind:
            held.found.append((kind, path, obj))
            if kind in ("file", "socket", "connection", "hdf5", "lock", "thread", "pool"):
                continue
        if isinstance(obj, torch.Tensor):
            continue  # a buffer, read without writing to it
        if isinstance(obj, np.ndarray) and obj.dtype != object:
            continue
        is_function = isinstance(obj, (types.FunctionType, types.MethodType))
        if not is_function:
            held.objects += weight
            held.object_bytes += sys.getsizeof(obj) * weight
            per_top[top] = per_top.get(top, 0) + weight
        if isinstance(obj, np.ndarray):  # dtype=object: an array of Python objects
            members = obj.ravel()
            indices = range(len(members)) if len(members) <= SAMPLE_ABOVE else _even(range(len(members)))
            scale = weight * (len(members) / len(indices) if len(indices) else 1)
            held.sampled |= len(members) > SAMPLE_ABOVE
            for i in indices:
                stack.append((members[i], f"{path}[…]", scale, top))
            continue
        length = len(obj) if isinstance(obj, (dict, list, tuple, deque, set, frozenset)) else 0
        scale = weight * (length / SAMPLE_SIZE if length > SAMPLE_ABOVE else 1)
        held.sampled |= length > SAMPLE_ABOVE
        for child_path, child in _children(obj, path):
            if id(child) in seen:
                continue
            if isinstance(child, _ATOMS):
                # Leaves are counted here, without a trip through the stack.
                seen.add(id(child))
                held.objects += scale
                held.object_bytes += sys.getsizeof(child) * scale
                per_top[top] = per_top.get(top, 0) + scale
                continue
            depth_top = top if top.count(".") >= 1 or child_path is None else child_path
            stack.append((child, child_path or path, scale, depth_top))
    if per_top:
        held.biggest = max(per_top, key=per_top.get)
    return held


# ---------------------------------------------------------------- the static checks


def _mb(n: float) -> str:
    if n < MIB / 10:
        return f"{n / 1024:,.0f} KB"
    return f"{n / MIB:,.0f} MB" if n >= 10 * MIB else f"{n / MIB:,.1f} MB"


def _hdf5_driver(obj) -> str:
    """The HDF5 driver an h5py File, Group or Dataset reads through: 'sec2' for a path (pread),
    'fileobj' for a Python file object, 'stdio' for C stdio (both with a shared offset)."""
    try:
        return str(getattr(obj, "file", obj).driver)
    except Exception:  # a closed file
        return "unknown"


def _hdf5_versions() -> str:
    h5py = sys.modules.get("h5py")
    return f"{h5py.__version__} (HDF5 {h5py.version.hdf5_version})" if h5py else "here"


def _public_name(obj) -> str:
    """numpy.random.Generator rather than numpy.random._generator.Generator."""
    return f"{type(obj).__module__.split('._')[0]}.{type(obj).__qualname__}"


def _threads_at_fork() -> str:
    """The other threads of this process and where each one is, as a fork would find them."""
    frames = sys._current_frames()
    threads = [t for t in threading.enumerate() if t is not threading.main_thread() and t.is_alive()
               and not t.name.startswith(("clinic-", "IPythonHistorySavingThread"))]
    where = [f"'{t.name}'" + (f" at {_shown(frames[t.ident].f_code.co_filename)}:{frames[t.ident].f_lineno}"
                              if t.ident in frames else "") for t in threads]
    return f"{len(threads)} other thread(s) run: {'; '.join(where[:4])}" if threads else ""


def _consults_worker_info(loader) -> bool | None:
    """Does the dataset's own code (or worker_init_fn) call get_worker_info()? None: source unavailable."""
    owners = [k for k in type(loader.dataset).__mro__ if k.__module__.split(".")[0] not in
              ("torch", "typing", "builtins", "collections", "_collections_abc", "abc")]
    sources = []
    for owner in owners + ([loader.worker_init_fn] if loader.worker_init_fn else []):
        try:
            sources.append(inspect.getsource(owner))
        except (OSError, TypeError):
            sources.append(None)
    if any(s and "get_worker_info" in s for s in sources):
        return True
    return None if None in sources else False


def static_findings(loader, setup: Setup, holdings: Holdings) -> list[Finding]:
    """What the loader, its dataset and this process show before a single batch is read."""
    import torch.multiprocessing
    from torch.utils.data.distributed import DistributedSampler

    workers, method = setup.num_workers, setup.start_method
    forked = workers > 0 and method == "fork"
    found = {}
    for kind, path, obj in holdings.found:
        found.setdefault(kind, []).append((path, obj))
    findings = []

    def add(*args):
        findings.append(Finding(*args))

    # 03: every Python object a forked worker reads gets its page copied (reference counts).
    if workers and holdings.objects >= 10_000:
        size = holdings.object_bytes
        counted = (("at least " if holdings.stopped else "about " if holdings.sampled else "")
                   + f"{holdings.objects:,.0f} Python objects ({_mb(size)}) reachable from the dataset"
                   + (f", most of them under {holdings.biggest}" if holdings.biggest else ""))
        if forked:
            add("03", "risk" if size >= COPY_RISK_MB * MIB else "note", "copy-on-read",
                f"{counted}. Each one a forked worker reads has its reference count written, which copies its "
                f"memory page into that worker: up to {_mb(size)} per worker over an epoch, "
                f"{_mb(size * workers)} for {workers} workers")
        else:
            add("03", "note", "copy-on-read", f"{counted}. Under {method} each worker unpickles its own copy "
                f"as it starts: about {_mb(size)} per worker, {_mb(size * workers)} for {workers}")

    if forked:  # 11 and 18: descriptors a forked worker shares with the parent and its siblings
        for path, obj in found.get("file", []):
            add("11", "risk", "open-handles",
                f"{path} is an open file ({getattr(obj, 'name', type(obj).__name__)!s}, mode "
                f"{getattr(obj, 'mode', '?')}): the {workers} forked workers share its offset, so one worker's "
                f"seek moves where another reads, and samples silently hold another record's bytes")
        for path, obj in found.get("socket", []) + found.get("connection", []):
            add("11", "risk", "open-connection",
                f"{path} is an open {_public_name(obj)}: the {workers} forked workers would talk over one "
                f"connection, their requests and replies interleaved")
        for path, obj in found.get("hdf5", []):
            driver = _hdf5_driver(obj)
            if driver in ("fileobj", "stdio"):
                add("18", "risk", "hdf5-handle",
                    f"{path} is an h5py {type(obj).__name__} opened before the workers fork, read through "
                    f"{'a Python file object' if driver == 'fileobj' else 'the stdio driver'}: the {workers} "
                    f"workers share one file offset (h5py errors such as 'filter returned failure during read', "
                    f"or silently wrong samples)")
            else:
                add("18", "note", "hdf5-handle",
                    f"{path} is an h5py {type(obj).__name__} opened before the workers fork (driver "
                    f"{driver}): h5py {_hdf5_versions()} reads such a file by position, which held in "
                    f"scenario 18's runs, but HDF5's caches and locks are copied into each worker, and an "
                    f"HDF5 older than 1.10.5 or a file object breaks it")

        # 01: a lock copied into a worker while another thread holds it is never released there.
        threads, locks = _threads_at_fork(), found.get("lock", [])
        # An RLock of Python < 3.14 has no locked(); its repr says.
        held = [(path, lock) for path, lock in locks
                 if (lock.locked() if hasattr(lock, "locked") else repr(lock).startswith("<locked"))]
        if held:
            add("01", "risk", "threads-and-locks",
                f"{held[0][0]} (a threading.{'RLock' if 'RLock' in type(held[0][1]).__name__ else 'Lock'}) "
                "is held right now"
                + (f", and {threads}" if threads else "") + ". Forked workers inherit it held, with no thread "
                "to release it: their first __getitem__ that takes it waits forever")
        elif locks and threads:
            add("01", "risk", "threads-and-locks",
                f"the dataset holds {len(locks)} lock(s) ({locks[0][0]}, …) and {threads}. If a thread holds a "
                "lock at the moment the workers fork (every epoch, without persistent workers), those workers "
                "wait on it forever")
        elif threads:
            add("01", "note", "threads-at-fork",
                f"when the workers fork, {threads}. A lock one of them holds at that moment (in a library, a "
                "logger, a cache) stays held in every worker; the dataset itself holds no lock")

    # 09: what spawn and forkserver workers receive by pickle.
    if workers:
        from fixes.spawn_safe import SpawnSafetyError, check_spawn_safe
        try:
            check_spawn_safe(loader)
            problem = None
        except SpawnSafetyError as err:
            problem = str(err).split(". Define functions")[0]  # the culprit; the remedy is in FIXES
        except Exception as err:  # a __reduce__ of the user's that fails in its own way
            problem = f"{type(err).__name__}: {err}"
        if problem and method in ("spawn", "forkserver"):
            add("09", "risk", "pickle-for-workers",
                f"under {method} every worker receives dataset, collate_fn and worker_init_fn by pickle: {problem}")
        elif problem and loader.multiprocessing_context is None and sys.version_info < (3, 14) \
                and sys.platform.startswith("linux"):
            add("09", "note", "start-method-3.14",
                "this loader relies on fork, the default start method before Python 3.14; from 3.14 Linux "
                f"defaults to forkserver, which pickles what workers receive: {problem}")

        # 17: a pool made in the main process is useless in a worker (its threads stay behind).
        for path, obj in found.get("pool", []):
            add("17", "risk", "pool-on-dataset",
                f"{path} is a {type(obj).__qualname__} made in the main process. In a forked worker its helper "
                "threads do not exist, so work submitted there is never picked up; under spawn it cannot be "
                "pickled at all")

        # 12: a generator object is copied into every worker with the same state.
        for path, obj in found.get("rng", []):
            reseeded = loader.worker_init_fn is not None
            add("12", "note" if reseeded else "risk", "rng-on-dataset",
                f"{path} is a {_public_name(obj)} stored on the dataset: every worker starts from a copy of the "
                f"same state, so the {workers} workers draw the same \"random\" numbers (PyTorch re-seeds only "
                "torch's, numpy's and random's global generators)"
                + (" — unless worker_init_fn re-seeds it" if reseeded else ""))

    # 13: an IterableDataset is replayed in full by every worker unless it splits itself.
    if workers > 1 and setup.iterable:
        consults = _consults_worker_info(loader)
        if not consults:
            add("13", "note" if consults is None else "risk", "iterable-worker-split",
                f"{setup.dataset} is an IterableDataset whose code never calls get_worker_info()"
                + (" (part of its source is unavailable)" if consults is None else "")
                + f": each of the {workers} workers iterates the whole stream, so every sample arrives "
                f"{workers} times per epoch")

    # 14: persistent workers keep the dataset copy they started with.
    if workers and setup.persistent_workers:
        dataset = loader.dataset
        named = [f"dataset.{n}" for n in getattr(dataset, "__dict__", {}) if "epoch" in n.lower()]
        named += [f"dataset.{n}()" for n in dir(type(dataset))
                  if n.startswith("set_") and "epoch" in n and callable(getattr(type(dataset), n))]
        if named:
            add("14", "risk", "persistent-epoch-state",
                f"persistent_workers=True and the dataset has epoch-dependent state ({', '.join(named)}): the "
                "workers keep the copy they got at the first epoch, so a change made in the main process "
                "(dataset.set_epoch(e), a curriculum step) never reaches them")

    # 15: the order repeats every epoch unless the loop calls set_epoch; the loop is not visible here.
    sampler = loader.sampler if loader.batch_sampler is None else getattr(loader.batch_sampler, "sampler", None)
    if isinstance(sampler, DistributedSampler) and sampler.shuffle:
        add("15", "note", "distributed-set-epoch",
            f"the sampler is a DistributedSampler (rank {sampler.rank} of {sampler.num_replicas}, shuffle=True, "
            f"seed {sampler.seed}): it shuffles with seed + epoch, and its epoch is {sampler.epoch} until the "
            "training loop calls set_epoch. The doctor cannot see the loop: check that it does")

    # 07: workers beyond the usable cores time-share them with the training loop.
    if workers > setup.usable_cores:
        add("07", "note", "workers-vs-cores",
            f"num_workers={workers} on {setup.usable_cores} usable cores ({setup.cores_from}): the workers and "
            "the training loop share those cores; more workers than cores pays off only while loading waits "
            "on I/O rather than computing")

    if workers and not setup.timeout:  # 01: timeout=0 waits forever for a worker that stopped
        stops = "a lock inherited at fork, a full /dev/shm" if setup.start_method == "fork" else \
            "a deadlock in __getitem__, a full /dev/shm"
        add("01", "note", "timeout",
            f"timeout=0 (the default): a worker that stops ({stops}) leaves the loop waiting forever "
            "without a message")

    if workers and torch.multiprocessing.get_sharing_strategy() == "file_system":  # 08
        add("08", "note", "shm-leak",
            "the sharing strategy is file_system: each tensor a worker sends is a named file in /dev/shm, and a "
            "process killed with SIGKILL (the OOM killer) leaves its files behind until reboot")
    return findings


# ---------------------------------------------------------------- the probe


@dataclasses.dataclass
class ProbeResult:
    events: list = dataclasses.field(default_factory=list)
    output: list = dataclasses.field(default_factory=list)   # every other line (their prints, tracebacks)
    outcome: str = "completed"   # completed | hang | limit | crashed | error | bad-input | not-run
    stage: str = ""
    stall_s: float = 0.0
    stacks: str = ""
    seconds: float = 0.0
    exit_status: int | None = None
    survivors: int = 0
    leaked_shm: list = dataclasses.field(default_factory=list)
    why_not: str = ""

    def first(self, name: str) -> dict | None:
        return next((e for e in self.events if e["event"] == name), None)

    def all(self, name: str) -> list[dict]:
        return [e for e in self.events if e["event"] == name]


def _event(line: str, result: ProbeResult) -> dict | None:
    """Parse one line of the probe's output: an event, or output kept as evidence."""
    # Not only at the start: a worker dying of SIGSEGV leaves PyTorch's message and a NUL
    # byte in front of the next line.
    at = line.find(EVENT_PREFIX)
    if at >= 0:
        try:
            event = json.loads(line[at + len(EVENT_PREFIX):])
        except json.JSONDecodeError:
            event = None
        if event:
            result.events.append(event)
            if line[:at].strip(" \0"):
                result.output.append(line[:at])
            return event
    result.output.append(line)
    return None


def run_probe(job: dict, limit_s: float = PROBE_LIMIT_S, build_s: float = 0.0) -> ProbeResult:
    """Start the probe's child program under supervision, watch it, and stop it for good."""
    from scenarios.instruments import shm_file_creator, torch_shm_files
    from scenarios.supervise import Supervised

    result = ProbeResult()
    folder = Path(tempfile.mkdtemp(prefix="clinic-checkup-"))
    stall_s = max(3.0, limit_s / 2)
    job = dict(job, budget_s=max(2.0, limit_s - 4.0))
    (folder / "job.json").write_text(json.dumps(job))
    launcher = folder / "checkup_probe.py"
    # A file of its own, so that spawned workers re-import a tiny main module (they import
    # the parent's __main__ as __mp_main__), and so the child finds its job next to it.
    launcher.write_text("from scenarios._checkup_probe import main\n\n"
                        "if __name__ == \"__main__\":\n    main(__file__)\n")
    shm_before = {p.name for p in torch_shm_files()}
    started = time.monotonic()
    run = Supervised(launcher)
    read, loaded_at, last_event = 0, None, started
    build_allowance = 2 * build_s + 20.0
    try:
        while True:
            while read < len(run.lines):
                event = _event(run.lines[read], result)
                read += 1
                if event:
                    last_event = time.monotonic()
                    if event["event"] == "loaded":
                        loaded_at = last_event
                    elif event["event"] == "stage":
                        result.stage = event["stage"]
            if run.exit_status() is not None:
                break
            now = time.monotonic()
            if loaded_at is None and now - started > build_allowance:
                result.outcome, result.stall_s = "hang", now - started
                result.stage = "build"
                break
            if loaded_at is not None and result.stage and now - last_event > stall_s:
                result.outcome, result.stall_s = "hang", now - last_event
                break
            if loaded_at is not None and now - loaded_at > limit_s:
                result.outcome = "limit"
                break
            time.sleep(0.05)
        if result.outcome in ("hang", "limit"):
            result.stacks = run.where_stuck()
    finally:  # also on Ctrl-C: nothing the probe started outlives it
        result.survivors = run.finish()
        result.seconds = time.monotonic() - started
        shutil.rmtree(folder, ignore_errors=True)
    for line in run.lines[read:]:  # lines that arrived while it was stopped
        _event(line, result)
    result.exit_status = run.exit_status()
    leaked = [p for p in torch_shm_files() if p.name not in shm_before
              and shm_file_creator(p.name) in (None, *run.seen)]
    for path in leaked:
        path.unlink(missing_ok=True)
    result.leaked_shm = [p.name for p in leaked]
    if result.outcome == "completed":
        if result.first("bad-input"):
            result.outcome = "bad-input"
        elif result.first("error"):
            result.outcome = "error"
        elif not result.first("done"):
            result.outcome = "crashed"
    return result


# What PyTorch or Python says, and the scenario that explains it.  First match wins;
# anything else raised in a worker is scenario 02's.
ERROR_MAP = [
    (r"daemonic processes are not allowed to have children", "17", "pool-in-worker"),
    (r"stack expects each tensor to be equal size|each element in list of batch should be of equal size"
     r"|Trying to resize storage that is not resizable", "16", "variable-size-batch"),
    (r"unable to allocate shared memory|No space left on device|Bus error", "04", "shm-in-flight"),
    (r"Too many open files", "08", "descriptor-budget"),
    (r"SemLock created in a fork context", "05", "lock-context"),
    (r"too many fds", "16", "tensors-at-worker-start"),
    (r"Can't pickle|Can't get attribute|cannot pickle|PicklingError|bootstrapping phase", "09", "pickle-for-workers"),
    (r"DataLoader timed out after", "01", "hang"),
    (r"killed by signal: Killed", "10", "memory-in-flight"),
    (r"killed by signal|exited unexpectedly", "06", "worker-crash"),
    (r"", "02", "worker-error"),
]
STAGES = {"iterate": "iterating the loader as configured", "compare": "reading the same batches with num_workers=0",
          "draws": "fetching one index through 2 workers", "build": "building the loader"}


def _stage(name: str, workers: int) -> str:
    if name == "compare" and not workers:
        return "reading through 2 workers"
    return STAGES.get(name, name or "starting")


def _genuine_lines(message: str, tb: str) -> tuple[str, str]:
    """(PyTorch's or Python's own headline, the line of user code it points at)."""
    text = message or tb
    lines = [line for line in text.splitlines() if line.strip()]
    caught = next((line.strip() for line in lines if "in DataLoader worker process" in line), "")
    last = lines[-1].strip() if lines else ""
    user_frame = ""
    for line in (message + "\n" + tb).splitlines():
        match = re.match(r'\s*File "([^"]+)", line (\d+),? in (\S+)', line)
        if match and _is_theirs(match.group(1)):
            user_frame = f"{match.group(1)}:{match.group(2)} in {match.group(3)}"
    headline = caught if caught and caught != last else ""
    return (f"{headline} … {last}" if headline else last), user_frame


def _faulting_frame(output: list[str]) -> str:
    """The user's innermost frame in faulthandler's dump (most recent call first)."""
    for line in output:
        match = re.match(r'\s*File "([^"]+)", line (\d+) in (\S+)', line)
        if match and _is_theirs(match.group(1)):
            return f"{match.group(1)}:{match.group(2)} in {match.group(3)}"
    return ""


def _in_process_outcome(probe: ProbeResult) -> str:
    """After an error in the workers the probe reads the same samples in its own process:
    what happened there, as a sentence to add to the evidence."""
    errors = probe.all("error")
    if len(errors) > 1 and errors[1].get("stage") == "compare":
        headline, frame = _genuine_lines(f"{errors[1].get('type')}: {errors[1].get('message', '')}",
                                         errors[1].get("traceback", ""))
        first_line = _genuine_lines(f"{errors[0].get('type')}: {errors[0].get('message', '')}",
                                    errors[0].get("traceback", ""))[0]
        if first_line.endswith(headline):
            return "; with num_workers=0 the same error, in the probe's own process"
        return f"; with num_workers=0: {headline}" + (f" (raised at {frame})" if frame else "")
    if probe.first("compare"):
        return "; with num_workers=0 the same batches load without error: it fails only in workers"
    status = probe.exit_status
    if probe.stage == "compare" and not probe.first("done") and status is not None and status < 0:
        frame = _faulting_frame(probe.output)
        return (f"; with num_workers=0 the probe's own process died of {signal.Signals(-status).name}"
                + (f" in {frame}" if frame else ""))
    return ""


def _worker_frames(stacks: str, pids: list[int]) -> str:
    """The top frames of each worker's stack (py-spy's dump), one entry per worker."""
    shown = []
    for block in re.split(r"(?m)^(?=Process \d+)", stacks):
        match = re.match(r"Process (\d+)", block)
        if not match or (pids and int(match.group(1)) not in pids):
            continue
        frames = [line.strip() for line in block.splitlines()[1:] if line.startswith("    ")]
        state = re.search(r'^Thread \d+ \(([^)]*)\): "MainThread"', block, re.MULTILINE)
        top = frames[:3] if frames else [block.strip().splitlines()[0][:200]]
        shown.append(f"worker {match.group(1)}" + (f" ({state.group(1)})" if state else "")
                     + " in " + " ← ".join(top))
    return "; ".join(shown[:2])


def probe_findings(probe: ProbeResult, setup: Setup) -> list[Finding]:
    findings = []
    workers = setup.num_workers
    started = probe.first("workers-started") or {}
    pids = started.get("pids", [])

    if probe.outcome == "hang":
        where = _worker_frames(probe.stacks, pids) if workers else ""
        findings.append(Finding(
            "01", "risk", "hang",
            f"no progress for {probe.stall_s:.1f} s while {_stage(probe.stage, workers)} "
            f"({len(probe.all('batch'))} batch(es) before it): the probe was stopped there"
            + (f". Where the workers wait: {where}" if where else ""), details=probe.stacks))

    error = probe.first("error")
    if error:
        message, tb = error.get("message", ""), error.get("traceback", "")
        text = f"{error.get('type')}: {message}\n{tb}"
        scenario, check = next((n, c) for pattern, n, c in ERROR_MAP if re.search(pattern, text))
        headline, frame = _genuine_lines(f"{error.get('type')}: {message}", tb)
        stage = error.get("stage")
        if check == "worker-crash":  # what PyTorch learnt about the death: the signal, and the worker's last words
            signal_line = re.search(r"is killed by signal: [^\n]+", tb)
            last_words = next((line.strip(" \0") for line in probe.output if "encountered in worker" in line), "")
            headline += "".join(f" ({text.strip()})" for text in (signal_line and signal_line.group(0), last_words)
                                if text and text.strip() not in headline)
        evidence = f"while {_stage(stage, workers)}: {headline}" + (f" (raised at {frame})" if frame else "")
        if workers and stage == "iterate":
            evidence += _in_process_outcome(probe)
        findings.append(Finding(scenario, "risk", check, evidence, details=tb))
    elif probe.outcome == "crashed":
        status = probe.exit_status
        died = (f"killed by signal {signal.Signals(-status).name}" if status is not None and status < 0
                else f"exited with status {status}")
        frame = _faulting_frame(probe.output)
        last = next((line for line in reversed(probe.output) if line.strip()), "")
        findings.append(Finding(
            "06", "risk", "worker-crash",
            f"the probe's process itself {died} while {_stage(probe.stage, workers)}"
            + (f", in {frame}" if frame else f"; its last words: {last.strip()[:300]}" if last else ""),
            details="\n".join(probe.output[-40:])))

    first = probe.first("first-batch")
    batches = probe.all("batch")
    start = probe.first("started") or {}
    if first and workers:
        measured_shm = max((m.get("shm") or 0 for m in probe.all("memory")), default=0)
        from fixes.memory_in_flight import shm_free_bytes
        shm_free = shm_free_bytes() if os.path.isdir("/dev/shm") else None
        findings += _in_flight_findings(setup, first, shm_free, *memory_headroom(), measured_shm)
        findings += _descriptor_findings(setup, first, probe.all("memory"), start)
    if first and setup.start_method in ("spawn", "forkserver") and first["seconds"] > 5:
        findings.append(Finding(
            "09", "note", "spawn-start-up",
            f"the first batch took {first['seconds']:.1f} s under {setup.start_method}: each worker starts a "
            f"fresh interpreter, imports torch and unpickles the dataset"
            + ("" if setup.persistent_workers else ", again at every epoch (persistent_workers=False)")))

    # 03, measured: growth of each worker's private memory per batch it delivered.
    if workers:
        growth = _worker_growth(probe.all("memory"), workers)
        if growth:
            per_batch_mb, delivered = growth
            epoch_batches = (setup.batches or delivered) / workers
            projected = per_batch_mb * epoch_batches
            ceiling = started.get("parent_uss")  # a worker cannot copy more than the parent holds
            capped = ceiling is not None and projected > ceiling
            projected = min(projected, ceiling) if capped else projected
            if projected >= COPY_RISK_MB and per_batch_mb >= 0.05:
                findings.append(Finding(
                    "03", "risk" if setup.start_method == "fork" else "note", "copy-on-read",
                    f"measured: each worker's private memory (USS) grew {per_batch_mb:.2f} MB per batch over "
                    f"{delivered} batches; at that rate a worker holds {projected:,.0f} MB more by the end of "
                    f"an epoch of {setup.batches or '?'} batches"
                    + (" (all of the parent's private memory: the most it can copy)" if capped else "")
                    + f", {projected * workers:,.0f} MB for {workers}"))

    # 13, measured: identical batches delivered by different workers.
    iterate = probe.first("iterate")
    compare = probe.first("compare")
    if setup.iterable and iterate and workers > 1:
        hashes = iterate.get("hashes", [])
        repeats = len(hashes) - len(set(hashes))
        alone = compare.get("hashes", []) if compare else []
        alone_repeats = len(alone) - len(set(alone))
        if hashes and repeats > alone_repeats:
            findings.append(Finding(
                "13", "risk", "duplicate-batches",
                f"measured: {repeats} of the first {len(hashes)} batches were exact copies of another "
                f"({alone_repeats} of {len(alone)} with num_workers=0): the workers replay the same stream"))

    # 12, measured: one index fetched by two workers, two epochs, and twice in one process.
    drawn = probe.first("draws")
    if drawn and drawn.get("in_process") and drawn["in_process"][0] != drawn["in_process"][1]:
        epochs = drawn["epochs"]
        same_workers = drawn["workers"] > 1 and len(epochs[0]) > 1 and epochs[0][0] == epochs[0][1]
        same_epochs = len(epochs) > 1 and epochs[0] == epochs[1]
        if same_workers or same_epochs:
            what = " and ".join(x for x in (
                "both workers returned the identical sample" if same_workers else "",
                "the next epoch returned it again, identical" if same_epochs else "") if x)
            findings.append(Finding(
                "12", "risk", "repeated-draws",
                f"measured: index {drawn['index']} is random (two reads in one process differ), yet {what}: "
                f"the random state the workers draw from is a copy, not a fresh seed"))

    # 05, measured: reading samples in one process changed the dataset's attributes.
    if compare and compare.get("changed_attributes") and workers:
        changed = ", ".join(compare["changed_attributes"][:4])
        findings.append(Finding(
            "05", "note", "state-written-in-getitem",
            f"measured: reading {compare['batches']} batches in one process changed {changed}. With workers "
            f"each one changes its own copy: the main process and the other workers never see those changes "
            f"(fine for a cache, wrong for state meant to be shared, such as what has been drawn)"))

    # 07, measured: throughput with and without workers.
    if iterate and compare and iterate.get("batches", 0) >= 2 and compare.get("batches", 0) >= 2:
        findings += _throughput_findings(setup, iterate, compare, batches)

    if probe.leaked_shm:
        findings.append(Finding(
            "08", "note", "shm-leak",
            f"the probe's processes left {len(probe.leaked_shm)} file(s) in /dev/shm "
            f"({', '.join(probe.leaked_shm[:3])}); the doctor removed them"))
    return findings


def _worker_growth(samples: list[dict], workers: int) -> tuple[float, int] | None:
    """MB per delivered batch of the worker that grew most, from the first full round on
    (a worker's first batch also pays for its start: imports, buffers)."""
    base = next((s for s in samples if s["n"] >= workers and s["uss"]), None)
    last = samples[-1] if samples else None
    if base is None or last is None or last["n"] - base["n"] < workers:
        return None
    delivered = (last["n"] - base["n"]) / workers
    grown = [last["uss"][pid] - base["uss"][pid] for pid in base["uss"] if pid in last["uss"]]
    return (max(grown) / delivered, last["n"] - base["n"]) if grown else None


def _in_flight_findings(setup: Setup, first: dict, shm_free: int | None, headroom: int,
                        headroom_from: str, measured_shm: int | None = None) -> list[Finding]:
    """04 and 10: batches in flight against /dev/shm, and the job's memory (the count and the
    peak as fixes/memory_in_flight.py predicts them)."""
    from fixes.memory_in_flight import batches_in_flight, predicted_peak_bytes

    batch, workers, prefetch = first["bytes"], setup.num_workers, setup.prefetch_factor or 2
    in_flight = batches_in_flight(workers, prefetch) * batch
    pinned = workers * prefetch * batch if setup.pin_memory else 0
    peak = predicted_peak_bytes(batch, workers, prefetch) + pinned
    arithmetic = (f"one batch is {_mb(batch)}; {workers} workers × prefetch_factor {prefetch} + 2 = "
                  f"{batches_in_flight(workers, prefetch)} batches in flight: {_mb(in_flight)}"
                  + (f" (the probe's loader held up to {_mb(measured_shm)} of /dev/shm)" if measured_shm else ""))
    findings = []
    if shm_free is not None and in_flight > shm_free * 0.5:
        findings.append(Finding(
            "04", "risk" if in_flight > shm_free else "note", "shm-in-flight",
            f"{arithmetic}, against {_mb(shm_free)} free in /dev/shm" + (
                ": workers will fail with \"unable to allocate shared memory\" or wait forever"
                if in_flight > shm_free else ": more than half of it")))
    findings.append(Finding(
        "10", "risk" if peak > headroom else "note", "memory-in-flight",
        arithmetic + (f", plus {_mb(pinned)} of pinned copies" if pinned else "")
        + f"; with each worker's own memory, up to {_mb(peak)}, {peak / max(headroom, 1):.0%} of the "
        f"{_mb(headroom)} {headroom_from}"))
    return findings


def _descriptor_findings(setup: Setup, first: dict, samples: list[dict], start: dict) -> list[Finding]:
    """08: descriptors each received batch holds, against `ulimit -n`."""
    strategy = start.get("sharing_strategy")
    soft = start.get("fd_soft_limit")
    per_batch = first.get("storages", 0)
    if strategy != "file_descriptor" or not soft or not per_batch:
        return []
    in_use = max((s.get("fds") or 0 for s in samples), default=0)
    room = max(soft - in_use, 0)
    keepable = room // per_batch
    requested = setup.num_workers * (setup.prefetch_factor or 2) + 2
    level = "risk" if keepable < requested else "note"
    return [Finding(
        "08", level, "descriptor-budget",
        f"each batch holds {per_batch} descriptor(s) while it lives (sharing strategy file_descriptor: one per "
        f"tensor storage); ulimit -n is {soft} and the probe's process used {in_use}: a loop that keeps its "
        f"batches (labels or outputs gathered for a metric) fails with \"Too many open files\" after "
        f"about {keepable:,} kept batches" + (f", fewer than the {requested} in flight" if level == "risk" else ""))]


def _throughput_findings(setup: Setup, iterate: dict, compare: dict, batches: list[dict]) -> list[Finding]:
    findings = []
    if setup.num_workers:
        # Steady rate with workers: after the first batch (which also pays for starting them).
        # The probe's own /proc readings between batches are taken out of the time.
        first, last = batches[0], batches[-1]
        spent = (last["seconds"] - last["measuring_s"]) - (first["seconds"] - first["measuring_s"])
        steady = spent / (len(batches) - 1) if len(batches) > 1 else None
        alone = compare["seconds"] / compare["batches"]
        if steady and steady > alone * 1.2 and alone > 0.002:
            findings.append(Finding(
                "07", "note", "workers-slower",
                f"measured: {1 / steady:,.1f} batches/s with {setup.num_workers} workers after the first, "
                f"{1 / alone:,.1f} batches/s with num_workers=0: sending each batch between processes "
                f"costs more than making it"))
        return findings
    alone = iterate["seconds"] / iterate["batches"]
    busy = iterate["cpu_seconds"] / iterate["seconds"] if iterate["seconds"] else 1.0
    with_workers = compare["seconds"] - compare.get("first_batch_s", 0)
    rate_workers = (compare["batches"] - 1) / with_workers if with_workers > 0 and compare["batches"] > 1 else None
    if alone > 0.005 and (busy < 0.5 or (rate_workers and rate_workers > 1.5 / alone)):
        findings.append(Finding(
            "07", "risk", "loading-waits",
            f"measured with num_workers=0: {alone * 1000:,.0f} ms per batch, the CPU busy {busy:.0%} of it"
            + (f"; {compare['workers']} workers delivered {rate_workers:,.1f} batches/s against "
               f"{1 / alone:,.1f}" if rate_workers else "")
            + ". Without workers the training loop waits for every batch"))
    return findings


# ---------------------------------------------------------------- putting it together


def _reconcile(findings: list[Finding]) -> list[Finding]:
    """Where the probe measured what a static check suspected, keep one finding with both."""
    merged = []
    for finding in findings:
        twin = next((f for f in merged if (f.scenario, f.check) == (finding.scenario, finding.check)), None)
        if twin is None:
            merged.append(finding)
        else:  # the same cause seen twice (read, then met by the probe): one finding, both pieces of evidence
            twin.evidence += f"; in the probe: {finding.evidence.removeprefix('measured: ')}"
            twin.level = "risk" if "risk" in (twin.level, finding.level) else twin.level
            twin.details = twin.details or finding.details
    findings = merged
    by_check = {f.check: f for f in findings}
    for static, measured in (("rng-on-dataset", "repeated-draws"), ("iterable-worker-split", "duplicate-batches")):
        if static in by_check and measured in by_check:
            by_check[static].evidence += f"; {by_check[measured].evidence}"
            by_check[static].level = "risk"
            findings.remove(by_check[measured])
    return sorted(findings, key=lambda f: (f.level != "risk", f.scenario, f.check))


def _downgrade_unconfirmed(findings: list[Finding], probe: ProbeResult | None) -> None:
    """A suspicion the probe measured and did not see becomes a note, with the measurement."""
    if probe is None or probe.outcome != "completed":
        return
    for finding in findings:
        if finding.check == "rng-on-dataset" and probe.first("draws") and \
                not any(f.check == "repeated-draws" for f in findings):
            drawn = probe.first("draws")
            if drawn.get("in_process") and drawn["in_process"][0] != drawn["in_process"][1]:
                finding.level = "note"
                finding.evidence += ("; the probe measured different draws in each worker and epoch "
                                     "(something re-seeds it)")
        if finding.check == "iterable-worker-split" and probe.first("iterate") and \
                not any(f.check == "duplicate-batches" for f in findings):
            hashes = probe.first("iterate").get("hashes", [])
            if len(hashes) >= 4 and len(set(hashes)) == len(hashes):
                finding.level = "note"
                finding.evidence += f"; the probe saw no duplicate among the first {len(hashes)} batches"


def _probe_status(probe: ProbeResult | None, setup: Setup) -> str:
    if probe is None:
        return "not run (--no-probe): checks that need a batch (memory in flight, descriptors) were skipped"
    if probe.outcome == "not-run":
        return f"not run: {probe.why_not}"
    batches = probe.all("batch")
    done = f"{len(batches)} batch(es) with {setup.num_workers} worker(s)"
    tail = f"; {probe.survivors} process(es) survived the cleanup" if probe.survivors else ""
    if probe.outcome == "hang":
        return f"stopped after {probe.seconds:.1f} s: no progress for {probe.stall_s:.1f} s ({done}){tail}"
    if probe.outcome == "limit":
        return f"stopped at its limit after {probe.seconds:.1f} s ({done}){tail}"
    if probe.outcome == "bad-input":
        return f"could not build the loader: {probe.first('bad-input')['message']}"
    if probe.outcome == "error":
        return f"{done}, then an error ({probe.seconds:.1f} s){tail}"
    if probe.outcome == "crashed":
        return f"the probe's process died after {done} ({probe.seconds:.1f} s){tail}"
    return f"{done} in {probe.seconds:.1f} s, then compared with {'num_workers=0' if setup.num_workers else '2 workers'}{tail}"


def _examine(loader, probe_job: dict | None, limit_s: float, build_s: float = 0.0, header: str = "") -> Findings:
    started = time.perf_counter()
    setup = describe(loader)
    roots = [("dataset", loader.dataset)]
    roots += [(name, getattr(loader, name)) for name in ("collate_fn", "worker_init_fn")
              if getattr(loader, name, None) is not None]
    holdings = walk(roots)
    findings = static_findings(loader, setup, holdings)
    probe = None
    if probe_job is not None:
        if not sys.platform.startswith("linux"):
            probe = ProbeResult(outcome="not-run", why_not=f"the probe reads Linux's /proc (this is {sys.platform})")
        elif probe_job.get("why_not"):
            probe = ProbeResult(outcome="not-run", why_not=probe_job["why_not"])
        else:
            probe = run_probe(probe_job, limit_s=limit_s, build_s=build_s)
            findings += probe_findings(probe, setup)
            _downgrade_unconfirmed(findings, probe)
    result = Findings(_reconcile(findings), setup=setup, probe_status=_probe_status(probe, setup), header=header)
    result.seconds = time.perf_counter() - started + build_s
    result.probe = probe
    return result


def examine(loader, probe: bool = True, *, limit_s: float = PROBE_LIMIT_S) -> Findings:
    """Examine a DataLoader object (in a notebook): the static checks, and the probe on a
    pickled copy of it.  Returns the findings (a list that prints as the report)."""
    from torch.utils.data import DataLoader

    if not isinstance(loader, DataLoader):
        raise TypeError(f"examine() needs a torch.utils.data.DataLoader, got {type(loader).__qualname__}")
    job = None
    folder = None
    if probe:
        folder = Path(tempfile.mkdtemp(prefix="clinic-checkup-loader-"))
        pickled = folder / "loader.pickle"
        try:
            with open(pickled, "wb") as out:
                pickle.dump(loader, out, protocol=pickle.HIGHEST_PROTOCOL)
            job = {"pickled": str(pickled), **_process_context()}
        except Exception as err:
            job = {"why_not": f"the loader cannot be sent to a fresh process ({type(err).__name__}: {err}); "
                              "examine the file that builds it instead: python -m scenarios doctor FILE.py:FUNCTION"}
    try:
        return _examine(loader, job, limit_s, header=f"{type(loader.dataset).__qualname__} loader")
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def format_report(findings: Findings) -> str:
    import textwrap

    def wrapped(text: str, first: str, indent: str = "      ") -> list[str]:
        return textwrap.wrap(text, width=102, initial_indent=indent + first, subsequent_indent=indent
                             + " " * len(first), break_long_words=False, break_on_hyphens=False)

    lines = [f"DataLoader doctor · {findings.header}"]
    if findings.setup:
        lines.append(f"  {findings.setup.line()}")
    lines.append(f"  probe: {findings.probe_status}")
    for finding in findings:
        lines += ["", f"{finding.level:<4}  {finding.scenario}  {finding.check}"]
        lines += wrapped(finding.evidence, "") + wrapped(finding.fix, "fix: ") + [f"      see: {finding.readme}"]
        if finding.details and finding.check == "hang":
            lines += ["      stacks:"] + [f"        {line}" for line in finding.details.splitlines()[:40]]
    risks = len(findings.risks)
    took = f" · {findings.seconds:.1f} s" if findings.seconds is not None else ""
    lines += ["", f"{risks} risk(s), {len(findings) - risks} note(s){took}"]
    return _readable("\n".join(lines))


def examine_file(target: str, probe: bool = True, *, limit_s: float = PROBE_LIMIT_S) -> Findings:
    """Import FILE.py, call FUNCTION() and examine the loader it returns; the probe calls the
    function again in its own process.  Raises BadInput for a target that cannot be examined."""
    started = time.perf_counter()
    loader, build_s = load_loader(target)
    path_text, _, name = target.rpartition(":")
    job = {"target": f"{Path(path_text).resolve()}:{name}", **_process_context()} if probe else None
    findings = _examine(loader, job, limit_s, build_s=build_s, header=target)
    findings.seconds = time.perf_counter() - started
    if findings.probe is not None and findings.probe.outcome == "bad-input":
        raise BadInput(f"{findings.probe.first('bad-input')['message']} (when the probe called it again)")
    return findings


def _process_context() -> dict:
    """What the probe's process takes over from this one: the current folder (relative data
    paths) and sys.path (where the dataset's classes are imported from)."""
    return {"cwd": os.getcwd(), "sys_path": [p for p in sys.path if p]}


def main(target: str, as_json: bool = False, probe: bool = True, limit_s: float = PROBE_LIMIT_S) -> int:
    """`python -m scenarios doctor FILE.py:FUNCTION [--json] [--no-probe]`; returns the exit status."""
    report_to = sys.stdout
    if as_json:  # whatever the user's code prints (now, or from its threads later) goes to stderr
        sys.stdout = sys.stderr
    try:  # (python -m scenarios has checked that torch, numpy and psutil are installed)
        findings = examine_file(target, probe=probe, limit_s=limit_s)
    except BadInput as err:
        print(f"error: {_readable(str(err))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:  # called as a function (tests, a notebook): leave this process's stdout as it was
        if as_json and sys.stdout is sys.stderr:
            sys.stdout = report_to
    if as_json:
        print(json.dumps({"findings": [f.as_dict() for f in findings]}, indent=1), file=report_to)
        report_to.flush()
    else:
        print(format_report(findings))
    sys.stdout.flush()
    if findings.risks:
        return EXIT_NOT_AS_EXPECTED
    if findings.probe is not None and findings.probe.outcome == "not-run" and not sys.platform.startswith("linux"):
        return EXIT_CANNOT_RUN
    return EXIT_OK
