"""What a workshop attempt's DataLoaders really did, seen from inside PyTorch (not from the script's prints).

The runner runs an attempt with a folder of the run's own first on PYTHONPATH; in it a
`sitecustomize.py` calls `install(PATH)` in every interpreter of the run (spawned and
forkserver workers too) before any of the attempt's code.  `install` waits for
`torch.utils.data.dataloader` (and torchdata's StatefulDataLoader, and torch._dynamo) to be imported,
then wraps:

- DataLoader.__init__: each loader as built (num_workers, batch_size, start method, persistent_workers,
  prefetch_factor);
- DataLoader.__iter__ and the iterators' __next__: batches and samples delivered per epoch per loader
  in the training process, the CPU time its training thread spent between two batches, and for each
  batch what the model receives: each sample's fingerprint (its bytes), its size, the training
  process's dataset state, and /dev/shm's use at that moment (fingerprints.py);
- the iterators' _next_index, where the grade asks (ASKED_ENV): the indices the sampler asked for,
  set beside the index field of the batch that answers them;
- dynamo's compilations (torch.compile), each as it starts: the graphs the training process built;
- PyTorch's (and torchdata's) worker loop `_worker_loop` (worker_hook.py): only a real DataLoader
  worker runs it, and there, every batch put on the data queue: how many, the worker's CPU time and
  its CPU and wall time from index to batch, the bytes it read, its USS, the random states it left,
  its dataset copy's state.

Each record is one JSON line written with os.write on a descriptor opened at install (O_APPEND: the
processes of a run share the file).  `summary(PATH)` reads it back for the grade.  Nothing here may
change what the attempt does: every failure of the hook is swallowed.
"""
from __future__ import annotations

import atexit
import functools
import json
import os
import sys
import time

from scenarios.clinic.run import fingerprints

_FD: int | None = None
_PATCHED: set[str] = set()
_WATCHED = ("torch.utils.data.dataloader", "torchdata.stateful_dataloader.stateful_dataloader", "torch._dynamo")
FIELDS_ENV = "CLINIC_OBSERVE_FIELDS"  # set by the grader where an exercise judges each tensor's rows
ASKED_ENV = "CLINIC_OBSERVE_ASKED"    # the sample's field that holds its index, where the grade compares it


def hook_env(observe: dict) -> dict[str, str]:
    """What the hook is told to record besides its usual, for an exercise's `observe` table: each
    tensor's rows (`unique = "every field"`), each sample's index beside the sampler's (`requested`)."""
    env = {}
    if observe.get("unique") == "every field":
        env[FIELDS_ENV] = "1"
    if observe.get("requested") is not None:
        env[ASKED_ENV] = str(observe["requested"])
    return env


def install(path: str) -> None:
    global _FD
    try:
        _FD = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError:
        return
    sys.meta_path.insert(0, _AfterImport())
    _ORIGINALS.update(_grading_functions())
    atexit.register(_note_replaced, os.getpid())


# What the grade reads besides the hook is the script's output and exit status: a script that
# replaces the functions that make them is noted when its interpreter exits.
_ORIGINALS: dict = {}


def _grading_functions() -> dict:
    import builtins
    return {"print": builtins.print, "sys.exit": sys.exit, "exit": getattr(builtins, "exit", None),
            "sys.stdout.write": getattr(sys.stdout, "write", None), "sys.stdout": sys.stdout}


# The hook's own wrappers, where _patch put them: an attempt that puts PyTorch's functions back
# hides what its DataLoaders did, and is noted at exit as one that replaced print would be.
_HOOKED: dict = {}


def _note_replaced(pid: int) -> None:
    if os.getpid() != pid:  # a forked child that ran the parent's exit handlers
        return
    try:
        now = _grading_functions()
        replaced = [name for name, original in _ORIGINALS.items() if now.get(name) != original]
        if replaced:
            _write({"k": "replaced", "pid": pid, "names": replaced})
        unhooked = [name for name, (owner, attribute, wrapper) in _HOOKED.items()
                    if owner.__dict__.get(attribute) is not wrapper]
        if unhooked:
            _write({"k": "unhooked", "pid": pid, "names": unhooked})
    except Exception:
        pass


def _write(record: dict) -> None:
    if _FD is None:
        return
    try:
        os.write(_FD, (json.dumps(record, separators=(",", ":")) + "\n").encode())
    except (OSError, TypeError, ValueError):
        pass


class _AfterImport:
    """A meta path finder that finds nothing itself: it patches a watched module once loaded."""

    def find_spec(self, name, path=None, target=None):
        if name not in _WATCHED or name in _PATCHED:
            return None
        _PATCHED.add(name)
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                spec.loader = _PatchingLoader(spec.loader)
                return spec
        return None


class _PatchingLoader:
    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        try:
            _patch(module)
        except Exception:  # the hook never breaks the attempt
            pass

    def __getattr__(self, name):
        return getattr(self._loader, name)


def _patch(module) -> None:
    if module.__name__ == "torch._dynamo":
        _watch_compiles(module.callback_handler)
        return
    if module.__name__ == "torch.utils.data.dataloader":
        loader_class, iterator_class = module.DataLoader, module._BaseDataLoaderIter
        from torch.utils.data._utils import worker as worker_module
        module_with_loop = module._utils.worker
    else:
        loader_class, iterator_class = module.StatefulDataLoader, module._StatefulBaseDataLoaderIter
        from torchdata.stateful_dataloader import worker as worker_module
        module_with_loop = module
    from scenarios.clinic.run.worker_hook import watched_loop
    loop = watched_loop(worker_module._worker_loop, _write)
    for owner in {worker_module, module_with_loop}:
        _hook(owner, "_worker_loop", loop)
    for owner, attribute, watch in ((loader_class, "__init__", _watched_init),
                                    (loader_class, "__iter__", _watched_iter),
                                    (iterator_class, "__next__", _watched_next)):
        if attribute in owner.__dict__:
            _hook(owner, attribute, watch(owner.__dict__[attribute]))
    if os.environ.get(ASKED_ENV) and "_next_index" in iterator_class.__dict__:
        _hook(iterator_class, "_next_index", _noting_asked(iterator_class._next_index))


def _hook(owner, attribute: str, wrapper) -> None:
    setattr(owner, attribute, wrapper)
    _HOOKED[f"{getattr(owner, '__name__', type(owner).__name__)}.{attribute}"] = (owner, attribute, wrapper)


def _watch_compiles(handler) -> None:
    """Each compilation dynamo starts for a frame (its id: frame/recompile, "0/3"), as torch.compile's
    own callbacks see it; on the handler itself, so that torch._dynamo.reset(), which clears the
    callbacks registered, does not stop the count."""
    start = handler.install_callbacks

    def install_callbacks(trigger, compile_id, *args, **kwargs):
        if getattr(trigger, "name", "") == "DYNAMO":
            _write({"k": "compile", "pid": os.getpid(), "id": str(compile_id)})
        return start(trigger, compile_id, *args, **kwargs)
    _hook(handler, "install_callbacks", install_callbacks)


# ---------------------------------------------------------------- the training process

_LOADERS = [0]


def _watched_init(init):
    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        if getattr(self, "_clinic_lid", None) is not None:  # a subclass's __init__ calling ours
            return
        try:
            _LOADERS[0] += 1
            object.__setattr__(self, "_clinic_lid", _LOADERS[0])
            object.__setattr__(self, "_clinic_epochs", 0)
            context = self.multiprocessing_context
            method = context.get_start_method() if context is not None else None
            if method is None and self.num_workers > 0:
                import multiprocessing
                method = multiprocessing.get_start_method(allow_none=True) or \
                    multiprocessing.get_context().get_start_method()
            _write({"k": "loader", "pid": os.getpid(), "lid": _LOADERS[0], "workers": self.num_workers,
                    "batch_size": self.batch_size, "start_method": method,
                    "persistent": bool(self.persistent_workers), "prefetch": self.prefetch_factor,
                    "class": type(self).__name__})
        except Exception:
            pass
    return __init__


def _watched_iter(iterate):
    @functools.wraps(iterate)
    def __iter__(self):
        iterator = iterate(self)
        try:
            epoch = self._clinic_epochs = getattr(self, "_clinic_epochs", 0) + 1
            tally = {"k": "epoch", "pid": os.getpid(), "lid": getattr(self, "_clinic_lid", 0), "epoch": epoch,
                     "workers": self.num_workers, "batches": 0, "samples": 0, "main_cpu_s": 0.0, "wait_s": 0.0}
            iterator._clinic_tally = tally
            iterator._clinic_last = None
            _write(tally)
        except Exception:
            pass
        return iterator
    return __iter__


def _noting_asked(next_index):
    """The sampler's index batches, in the order the iterator takes them (from its construction on,
    which already asks for the first batches): PyTorch delivers batches in that order (in_order=True,
    the default), so the k-th batch received was the k-th asked for."""
    @functools.wraps(next_index)
    def _next_index(self):
        indices = next_index(self)
        self.__dict__.setdefault("_clinic_asked", []).append(indices)
        return indices
    return _next_index


def _watched_next(step):
    @functools.wraps(step)
    def __next__(self):
        tally = getattr(self, "_clinic_tally", None)
        if tally is None:
            return step(self)
        if tally["pid"] != os.getpid():  # an iterator a forked process inherited: its own tally
            tally = self._clinic_tally = dict(tally, pid=os.getpid(), batches=0, samples=0, main_cpu_s=0.0,
                                              wait_s=0.0)
            self._clinic_last = None
        called = time.monotonic()
        cpu = time.thread_time()  # the training thread's own: a thread pool's spinning is not its work
        batch = step(self)  # StopIteration and errors pass through untouched
        try:
            last, now = self._clinic_last, time.monotonic()
            if last is not None:  # the training process's own work since the previous batch
                tally["main_cpu_s"] += cpu - last
                # the steady state, as a script's utilisation is (the first batch also starts the
                # workers): the loop's time between batches, and its waiting in this call
                tally["step_s"] = tally.get("step_s", 0.0) + called - self._clinic_returned
                tally["steady_wait_s"] = tally.get("steady_wait_s", 0.0) + now - called
            tally["wait_s"] += now - called
            tally["batches"] += 1
            tally["samples"] += _samples(batch)
            _write(tally)
            _write_delivered(self, tally, batch)
            self._clinic_last, self._clinic_returned = time.thread_time(), time.monotonic()
        except Exception:
            pass
        return batch
    return __next__


def _write_delivered(iterator, tally: dict, batch) -> None:
    """What the model receives in this batch: each sample's fingerprint, the training process's
    copy of the dataset as it stands, and /dev/shm's use now."""
    fields = [] if os.environ.get(FIELDS_ENV) else None  # each tensor's rows too, where the grade asks
    asked = getattr(iterator, "_clinic_asked", None)
    indices = _asked_and_got(asked.pop(0), batch) if asked else {}
    _write({**indices, "k": "batch", "pid": tally["pid"], "lid": tally["lid"], "epoch": tally["epoch"],
            "workers": tally["workers"], "fp": fingerprints.sample_fingerprints(batch, fields), "fields": fields,
            "bytes": fingerprints.sample_bytes(batch),
            "ds": fingerprints.dataset_state(getattr(iterator, "_dataset", None)),
            "shm_mb": fingerprints.shm_used_mb()})


def _asked_and_got(indices, batch) -> dict:
    """The indices the sampler asked for and the ones the batch's index field holds."""
    try:
        field = batch[int(os.environ[ASKED_ENV])]
        return {"asked": [int(i) for i in indices], "got": [int(i) for i in field.tolist()]}
    except Exception:
        return {}


def _samples(batch) -> int:
    """Samples in a batch: the first dimension of its first tensor or array, or its length."""
    for _ in range(4):
        shape = getattr(batch, "shape", None)
        if shape is not None:
            return int(shape[0]) if len(shape) else 1
        if isinstance(batch, dict) and batch:
            batch = next(iter(batch.values()))
        elif isinstance(batch, (list, tuple)) and batch:
            if not isinstance(batch[0], (list, tuple, dict)) and getattr(batch[0], "shape", None) is None:
                return len(batch)
            batch = batch[0]
        else:
            break
    return 1


def summary(path) -> dict:
    """What the hook recorded, read back (observed.py)."""
    from scenarios.clinic.run.observed import summary as read_back
    return read_back(path)
