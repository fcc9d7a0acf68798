"""CUDA asked for where a DataLoader worker runs: while a sample is built, a batch collated and
worker_init_fn runs.  The probe's child calls start() before its first stage and finish() after
it; checks 25, 26 and 27 read its event.

Each request is recorded with the file and line of the user's code that made it, and run on the
CPU instead, so that CUDA is never initialised (a machine without a GPU answers the same as one
with it, and the probe's own process stays safe to fork).  A `torch.overrides.TorchFunctionMode`
sees every torch call: `device="cuda"` in a factory, `.cuda()`, `.to("cuda")`, a module's
`.to(device)`; `torch.cuda.set_device` and its kind are not torch functions and are replaced.
A tensor made on the CPU in place of the GPU is marked, and the mark follows what is computed
from it, so that the batch's tensors say which of them would have been on the GPU.
"""
from __future__ import annotations

import json
import os
import select
import signal
import time
import traceback

from scenarios.clinic.paths import shown

LIMIT_S = 12.0         # the recording's own bound; the probe's budget holds it
MAX_REQUESTS = 12     # distinct places kept
_MARK = "_clinic_on_cuda"
# torch.cuda's calls that initialise CUDA without being torch functions.
_CUDA_CALLS = ("set_device", "init", "synchronize", "current_device", "current_stream", "mem_get_info")


_STAGES = {"worker_init_fn": "worker_init_fn", "sample": "building a sample", "collate_fn": "collate_fn"}


def _asks_cuda(value) -> bool:
    import torch
    return (isinstance(value, str) and value.split(":")[0] == "cuda") or \
        (isinstance(value, torch.device) and value.type == "cuda")


def _place() -> str:
    """`file:line` of the innermost frame that is neither torch's nor this module's."""
    import torch
    skip = (os.path.dirname(torch.__file__) + os.sep, __file__)
    for frame in reversed(traceback.extract_stack()[:-2]):
        if not frame.filename.startswith(skip[0]) and frame.filename != skip[1]:
            return f"{shown(frame.filename)}:{frame.lineno}"
    return "?"


def _mode():
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._pytree import tree_flatten

    class CudaRequests(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.stage, self.requests = "", []

        def note(self, what: str) -> None:
            place = _place()
            if len(self.requests) < MAX_REQUESTS and not any(r["where"] == place for r in self.requests):
                self.requests.append({"stage": self.stage, "call": what, "where": place,
                                      "text": f"{_STAGES[self.stage]} asked for CUDA at {place} ({what})"})

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs, name = dict(kwargs or {}), getattr(func, "__name__", str(func))
            if name == "cuda":  # Tensor.cuda: the tensor itself stands in for its GPU copy
                self.note(".cuda()")
                return _marked(args[0].detach().clone())
            asked = [i for i, a in enumerate(args) if name == "to" and (_asks_cuda(a) or isinstance(a, int)
                                                                          and not isinstance(a, bool) and i == 1)]
            args = tuple("cpu" if i in asked else a for i, a in enumerate(args))
            if _asks_cuda(kwargs.get("device")):
                asked.append("device")
                kwargs["device"] = "cpu"
            result = func(*args, **kwargs)
            if asked:
                self.note(f"{name}(…cuda…)")
            leaves = [x for x in tree_flatten((args, kwargs))[0] if isinstance(x, torch.Tensor)]
            if (asked or any(getattr(x, _MARK, False) for x in leaves)) and not _back_to_cpu(name, args, asked):
                for out in tree_flatten(result)[0]:
                    if isinstance(out, torch.Tensor):
                        _marked(out)
            return result
    return CudaRequests()


def _back_to_cpu(name: str, args: tuple, asked: list) -> bool:
    """`.cpu()`, `.numpy()` or `.to("cpu")` of a tensor that would be on the GPU: the result is not."""
    if name in ("cpu", "numpy"):
        return True
    return name == "to" and not asked and any(str(a).split(":")[0] == "cpu" for a in args[1:])


def _marked(tensor):
    try:
        setattr(tensor, _MARK, True)
    except (AttributeError, RuntimeError):  # a tensor subclass with slots
        pass
    return tensor


def _replace_cuda_calls(mode) -> None:
    """torch.cuda's initialising calls, recorded and not made (this forked child only)."""
    import torch

    def stand_in(name):
        def called(*args, **kwargs):
            mode.note(f"torch.cuda.{name}()")
            return 0 if name == "current_device" else None
        return called
    for name in _CUDA_CALLS:
        setattr(torch.cuda, name, stand_in(name))


def _first_samples(loader):
    from torch.utils.data import IterableDataset
    if isinstance(loader.dataset, IterableDataset):
        count = loader.batch_size or 1
        stream = iter(loader.dataset)
        return [next(stream) for _ in range(count)]
    if loader.batch_sampler is not None:
        return [loader.dataset[i] for i in next(iter(loader.batch_sampler))]
    return loader.dataset[next(iter(loader.sampler))]


def _record_here(loader) -> dict:
    import torch
    from torch.utils._pytree import tree_flatten
    from torch.utils.data._utils import worker as worker_module

    mode, outcome = _mode(), {"batch_on_cuda": False, "stopped_at": None}
    _replace_cuda_calls(mode)
    with mode:
        try:
            if loader.worker_init_fn is not None and loader.num_workers:
                mode.stage = "worker_init_fn"
                # As in a worker: get_worker_info() answers for worker 0 of this loader.
                worker_module._worker_info = worker_module.WorkerInfo(
                    id=0, num_workers=loader.num_workers, seed=0, dataset=loader.dataset)
                loader.worker_init_fn(0)
            mode.stage = "sample"
            samples = _first_samples(loader)
            mode.stage = "collate_fn"
            batch = loader.collate_fn(samples)
            outcome["batch_on_cuda"] = any(getattr(x, _MARK, False) for x in tree_flatten(batch)[0]
                                           if isinstance(x, torch.Tensor))
        except Exception as err:  # the user's code failing on the CPU stand-ins: what was asked stays
            outcome["stopped_at"] = f"{mode.stage}: {type(err).__name__}: {str(err)[:160]}"
    return {"requests": mode.requests, **outcome}


def start(loader) -> tuple[int, int, float] | dict:
    """Start what _record_here finds in a forked child, so that whatever worker_init_fn and
    __getitem__ change (a dataset sharded by worker, a file opened) stays out of the probe.  Forked
    before the loader starts its workers and threads (a fork after them can inherit a queue's lock,
    held), and read by `finish` after the first stage, so a child that waits on the user's own lock
    delays nothing.  Returns (pid, pipe, deadline), or the answer where there is no fork."""
    if not hasattr(os, "fork"):
        return {"requests": [], "skipped": "no fork on this platform"}
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        os.close(read)
        try:
            found = _record_here(loader)
        except BaseException as err:
            found = {"requests": [], "skipped": f"{type(err).__name__}: {err}"[:200]}
        os.write(write, json.dumps(found, default=str).encode())
        os._exit(0)
    os.close(write)
    return pid, read, time.monotonic() + LIMIT_S


def finish(started: tuple[int, int, float] | dict, waiting=lambda: None) -> dict:
    """The child's answer, waiting at most until its deadline (calling `waiting` each second, so
    that the doctor's watch sees a slow recording as progress, not a hang); the child is reaped
    either way.  On a loaded machine the child took 5-12 s."""
    if isinstance(started, dict):
        return started
    pid, read, deadline = started
    received = b""
    try:
        while (left := deadline - time.monotonic()) > 0:
            if not select.select([read], [], [], min(left, 1.0))[0]:
                waiting()
                continue
            chunk = os.read(read, 65536)
            if not chunk:
                break
            received += chunk
    finally:
        os.close(read)
        if os.waitpid(pid, os.WNOHANG) == (0, 0):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    try:
        return json.loads(received)
    except ValueError:
        return {"requests": [], "skipped": f"no answer within {LIMIT_S:g} s"}
