"""What a workshop attempt's DataLoaders really did, seen from inside PyTorch (not from the script's prints).

The runner runs an attempt with a folder of the run's own first on PYTHONPATH; in it a
`sitecustomize.py` calls `install(PATH)` in every interpreter of the run (spawned and
forkserver workers too) before any of the attempt's code.  `install` waits for
`torch.utils.data.dataloader` (and torchdata's StatefulDataLoader, and torch._dynamo) to be imported,
then wraps:

- DataLoader.__init__ (loop_hook.py): each loader as built (num_workers, batch_size, start method,
  persistent_workers, prefetch_factor);
- DataLoader.__iter__ and the iterators' __next__, through the observer the doctor's probe uses too
  (scenarios/clinic/observer.py): batches and samples delivered per epoch per loader in the training
  process, the CPU time its training thread spent between two batches, the loop's time between
  batches against its waiting in __next__, the worker that made each batch, and for each
  batch what the model receives: each sample's fingerprint (its bytes), its size, the training
  process's dataset state, and /dev/shm's use at that moment (fingerprints.py);
- the iterators' _next_index, where the grade asks (ASKED_ENV): the indices the sampler asked for,
  set beside the index field of the batch that answers them;
- dynamo's compilations (torch.compile), each as it starts: the graphs the training process built;
- the training step (step_hooks.py): a compiled module's calls and the shape each received, and
  DistributedDataParallel's forwards with the rank's parameters at its exit;
- PyTorch's (and torchdata's) worker loop `_worker_loop` (worker_hook.py): only a real DataLoader
  worker runs it, and there, every batch put on the data queue: how many, the worker's CPU time and
  its CPU and wall time from index to batch, the bytes it read, its USS, the random states it left,
  its dataset copy's state;
- tokenizers' batch entry points (pool_hooks.py): each process's first use of its thread pool.

Each record is one JSON line written with os.write on a descriptor opened at install (O_APPEND: the
processes of a run share the file).  `summary(PATH)` reads it back for the grade.  Nothing here may
change what the attempt does: every failure of the hook is swallowed.
"""
from __future__ import annotations

import atexit
import json
import os
import sys

from scenarios.clinic.run.loop_hook import ASKED_ENV, FIELDS_ENV

_FD: int | None = None
_PATCHED: set[str] = set()
_WATCHED = ("torch.utils.data.dataloader", "torchdata.stateful_dataloader.stateful_dataloader", "torch._dynamo",
            "torch.nn.parallel.distributed", "tokenizers")


def hook_env(observe: dict) -> dict[str, str]:
    """What the hook is told to record besides its usual, for an exercise's `observe` table: each
    tensor's rows (`unique = "every field"`), each sample's index beside the sampler's (`requested`)."""
    env = {}
    if observe.get("unique") == "every field" or observe.get("varied_fields"):
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
    from scenarios.clinic.run import step_hooks
    step_hooks.watch(_write)
    if module.__name__ == "torch._dynamo":
        _watch_compiles(module.callback_handler)
        compiled = module.eval_frame.OptimizedModule
        _hook(compiled, "__call__", step_hooks.shaped_call(compiled.__call__))
        return
    if module.__name__ == "tokenizers":
        from scenarios.clinic.run import pool_hooks
        pool_hooks.install(module, _hook, _write)
        return
    if module.__name__ == "torch.nn.parallel.distributed":
        ddp = module.DistributedDataParallel
        _hook(ddp, "forward", step_hooks.counted_forward(ddp.forward))
        return
    if module.__name__ == "torch.utils.data.dataloader":
        loader_class, iterator_class = module.DataLoader, module._BaseDataLoaderIter
        from torch.utils.data._utils import worker as worker_module
        module_with_loop = module._utils.worker
    else:
        loader_class, iterator_class = module.StatefulDataLoader, module._StatefulBaseDataLoaderIter
        from torchdata.stateful_dataloader import worker as worker_module
        module_with_loop = module
    from scenarios.clinic.run import loop_hook
    from scenarios.clinic.run.worker_hook import watched_loop
    loop_hook.watch(_write)
    loop = watched_loop(worker_module._worker_loop)
    for owner in {worker_module, module_with_loop}:
        _hook(owner, "_worker_loop", loop)
    for owner, attribute, watch in ((loader_class, "__init__", loop_hook.watched_init),
                                    (loader_class, "__iter__", loop_hook.watched_iter),
                                    (loader_class, "load_state_dict", loop_hook.watched_load),
                                    (loader_class, "state_dict", loop_hook.watched_state),
                                    (iterator_class, "__next__", loop_hook.watched_next)):
        if attribute in owner.__dict__:
            _hook(owner, attribute, watch(owner.__dict__[attribute]))
    if os.environ.get(ASKED_ENV) and "_next_index" in iterator_class.__dict__:
        _hook(iterator_class, "_next_index", loop_hook.noting_asked(iterator_class._next_index))


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


def summary(path) -> dict:
    """What the hook recorded, read back (observed.py)."""
    from scenarios.clinic.run.observed import summary as read_back
    return read_back(path)
