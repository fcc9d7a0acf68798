"""The grading hook around the training step (installed by observe.py, which see), for exercises whose
lesson is what the step did with the batches, not only what the loader delivered:
- DistributedDataParallel's forward: how many steps this rank's DDP model took, and at the process's
  exit a fingerprint of its parameters (30: ranks that ran the same steps end with the same weights;
  an extra batch under no_sync(), or a collective's timeout caught, leaves them apart);
- a torch.compile'd module's calls: the shape of the tensor each call received (34: the step gets the
  batches the loader delivered, not a crop of them, and it is the compiled module that gets them).
Every failure of the hook is swallowed: it never changes what the attempt does."""
from __future__ import annotations

import atexit
import functools
import hashlib
import os
import weakref

_WRITERS: list = []  # observe.py's writer of a record, given by watch (no import back)
_DDP: dict = {}      # this process's DDP models: id -> [weak reference, forwards, rank]


def watch(writer) -> None:
    if not _WRITERS:
        _WRITERS.append(writer)


def _write(record: dict) -> None:
    for writer in _WRITERS[:1]:
        writer(record)


def counted_forward(forward):
    @functools.wraps(forward)
    def wrapper(self, *args, **kwargs):
        try:
            if id(self) not in _DDP:
                if not _DDP:
                    atexit.register(_parameters_at_exit, os.getpid())
                _DDP[id(self)] = [weakref.ref(self), 0, getattr(self.process_group, "rank", lambda: None)()]
            _DDP[id(self)][1] += 1
        except Exception:
            pass
        return forward(self, *args, **kwargs)
    return wrapper


def _parameters_at_exit(pid: int) -> None:
    if os.getpid() != pid:  # a forked child that ran the parent's exit handlers
        return
    for reference, forwards, rank in list(_DDP.values()):
        try:
            model = reference()
            digest = hashlib.sha1()
            for parameter in (model.module.parameters() if model is not None else ()):
                digest.update(parameter.detach().cpu().contiguous().numpy().tobytes())
            _write({"k": "ddp", "pid": pid, "rank": rank, "forwards": forwards,
                    "params": digest.hexdigest()[:16] if model is not None else None})
        except Exception:
            pass


def shaped_call(call):
    @functools.wraps(call)
    def wrapper(self, *args, **kwargs):
        try:
            first = next((a for a in list(args) + list(kwargs.values()) if hasattr(a, "shape")), None)
            _write({"k": "compiled_call", "pid": os.getpid(),
                    "shape": list(first.shape) if first is not None else None})
        except Exception:
            pass
        return call(self, *args, **kwargs)
    return wrapper
