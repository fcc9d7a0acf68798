"""The grading hook in the training process (installed by observe.py, which see): DataLoader.__init__
(each loader as built), __iter__ and the iterators' __next__ (batches and samples delivered per epoch,
the training thread's CPU between batches, the loop's time between batches and its waiting for them,
the worker that made each batch: the observer the doctor's probe watches with too, observer.py; and
for each batch what the model receives: fingerprints.py), and, where the grade asks, the sampler's
index batches beside each batch's index field."""
from __future__ import annotations

import functools
import os
import sys
import time
import traceback

from scenarios.clinic.observer import Observer
from scenarios.clinic.run import fingerprints
from scenarios.signal_masks import python_handler, sigterm_disposition

FIELDS_ENV = "CLINIC_OBSERVE_FIELDS"  # set by the grader where an exercise judges each tensor's rows
ASKED_ENV = "CLINIC_OBSERVE_ASKED"    # the sample's field that holds its index, where the grade compares it
_WRITERS: list = []  # observe.py's writer of a record, given by watch (no import back)


def write(record: dict) -> None:
    """A record of either hook (this one and worker_hook.py), through observe.py's one writer."""
    for writer in _WRITERS[:1]:
        writer(record)


def watch(writer) -> None:
    if not _WRITERS:
        _WRITERS.append(writer)


_LOADERS = [0]


def _is_stream(dataset) -> bool:
    # Imported here, never at the top: observe.py imports this module before torch is loaded, and
    # loading torch then would leave nothing for its import hook to patch.
    from torch.utils.data.dataset import IterableDataset
    return isinstance(dataset, IterableDataset)


def _stream_shuffles(dataset) -> bool | None:
    """Whether a stream shuffles itself, where it says so: a Hugging Face IterableDataset's shuffle() puts a
    BufferShuffledExamplesIterable in its chain of example iterables (datasets 5.2.0); None where the stream
    does not tell (a plain IterableDataset, a webdataset pipeline)."""
    inner = getattr(dataset, "_ex_iterable", None) if _is_stream(dataset) else None
    if inner is None:
        return None
    for _ in range(16):  # .map(), .filter() and the like wrap it: their ex_iterable is the one before
        if inner is None or "Shuffled" in type(inner).__name__:
            return inner is not None
        inner = getattr(inner, "ex_iterable", None)
    return False


def _stream_epoch(dataset):
    """A stream's own epoch as this process holds it when an epoch starts (an int attribute `epoch` or `_epoch` of
    the stream or of the dataset it wraps): what its shuffle draws from, where it draws from one; None elsewhere."""
    for _ in range(4):
        if dataset is None or not _is_stream(dataset):
            return None
        held = getattr(dataset, "__dict__", {})
        value = next((held[name] for name in ("epoch", "_epoch") if isinstance(held.get(name), int)), None)
        if value is not None:
            return value
        dataset = held.get("dataset")
    return None


def _rank(sampler) -> int | None:
    """This process's rank where it is one of several: as torchrun, accelerate and Lightning set RANK,
    else as its initialized process group says, else as a DistributedSampler was told (num_replicas, rank)."""
    try:
        if int(os.environ.get("WORLD_SIZE", "1")) > 1 and "RANK" in os.environ:
            return int(os.environ["RANK"])
    except ValueError:
        pass
    dist = sys.modules.get("torch.distributed")  # ranks started by mp.spawn with init_process_group(rank=…)
    if dist is not None and dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        return dist.get_rank()
    return getattr(sampler, "rank", None) if getattr(sampler, "num_replicas", 1) > 1 else None


def watched_init(init):
    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        if getattr(self, "_clinic_lid", None) is not None:  # a subclass's __init__ calling ours
            return
        try:
            _LOADERS[0] += 1
            object.__setattr__(self, "_clinic_lid", _LOADERS[0])
            object.__setattr__(self, "_clinic_epochs", 0)
            sampler = getattr(self, "sampler", None)
            context = self.multiprocessing_context
            method = context.get_start_method() if context is not None else None
            if method is None and self.num_workers > 0:
                import multiprocessing
                method = multiprocessing.get_start_method(allow_none=True) or \
                    multiprocessing.get_context().get_start_method()
            record = {"k": "loader", "pid": os.getpid(), "lid": _LOADERS[0], "workers": self.num_workers,
                      "batch_size": self.batch_size, "start_method": method,
                      "persistent": bool(self.persistent_workers), "prefetch": self.prefetch_factor,
                      "class": type(self).__name__, "iterable": _is_stream(self.dataset),
                      "stream_shuffles": _stream_shuffles(self.dataset),
                      "rank": _rank(sampler), "sampler": type(sampler).__name__,
                      "shuffle": getattr(sampler, "shuffle", None)}
            object.__setattr__(self, "_clinic_record", record)
            write(record)
        except Exception:
            pass
    return __init__


def _ranked(loader) -> None:
    """A loader built before its process joined the job (Lightning's ranks build theirs in the script, then fit
    starts the process group) learns its rank at its first iter(): its record written again, with it."""
    record = getattr(loader, "_clinic_record", None)
    if record is not None and record.get("rank") is None:
        rank = _rank(getattr(loader, "sampler", None))
        if rank is not None:
            object.__setattr__(loader, "_clinic_record", {**record, "rank": rank})
            write(loader._clinic_record)


def watched_iter(iterate):
    @functools.wraps(iterate)
    def __iter__(self):
        state = getattr(self, "next_iter_state", None)  # a StatefulDataLoader's loaded state, which iter() takes
        iterator = iterate(self)
        try:
            at = _resumed_at(state) if state else 0
            if state:
                write({"k": "resumed", "pid": os.getpid(), "lid": getattr(self, "_clinic_lid", 0), "at": at})
            _ranked(self)
            epoch = self._clinic_epochs = getattr(self, "_clinic_epochs", 0) + 1
            iterator._clinic_seen = Observer()
            iterator._clinic_tally = {"k": "epoch", "pid": os.getpid(), "lid": getattr(self, "_clinic_lid", 0),
                                      "epoch": epoch, "workers": self.num_workers,
                                      "stream_epoch": _stream_epoch(self.dataset),
                                      "worker_pids": [w.pid for w in getattr(iterator, "_workers", [])],
                                      "sigterm": sigterm_disposition(), "sigterm_handler": python_handler()}
            write(_tallied(iterator._clinic_tally, iterator._clinic_seen))
            # its tally, never the iterator itself: a loader holding it would keep a dropped iterator's workers
            object.__setattr__(self, "_clinic_reading", (at, iterator._clinic_tally))
        except Exception:
            pass
        return iterator
    return __iter__


def watched_load(load):
    """A state loaded into a StatefulDataLoader, kept for its next iter(): how many iterators the loader
    had made by then.  An older one goes on from where it was (32: the loop's iterator taken first)."""
    @functools.wraps(load)
    def load_state_dict(self, state_dict, *args, **kwargs):
        try:
            if state_dict:
                write({"k": "state_loaded", "pid": os.getpid(), "lid": getattr(self, "_clinic_lid", 0),
                       "iterators": getattr(self, "_clinic_epochs", 0)})
        except Exception:
            pass
        return load(self, state_dict, *args, **kwargs)
    return load_state_dict


def watched_state(save):
    """A StatefulDataLoader's state as saved, beside where the loop is in the iterator it reads: the batch
    that iterator resumed at and the batches received since (36: a count that runs ahead of the loop)."""
    @functools.wraps(save)
    def state_dict(self, *args, **kwargs):
        state = save(self, *args, **kwargs)
        try:
            offset, tally = getattr(self, "_clinic_reading", (0, None))
            if tally is not None and isinstance(state, dict):
                write({"k": "state_saved", "pid": os.getpid(), "lid": tally["lid"], "epoch": tally["epoch"],
                       "says": _resumed_at(state), "received": offset + tally.get("batches", 0)})
        except Exception:
            pass
        return state
    return state_dict


def _resumed_at(state: dict) -> int:
    """The batch a loaded torchdata state resumes at: its snapshot's step and the steps since, with workers;
    its count of batches yielded, without."""
    snapshot = state.get("_snapshot")
    if isinstance(snapshot, dict):
        return int(snapshot.get("_snapshot_step", 0)) + int(state.get("_steps_since_snapshot", 0))
    return int(state.get("_num_yielded", 0))


def noting_asked(next_index):
    """The sampler's index batches, in the order the iterator takes them (from its construction on,
    which already asks for the first batches): PyTorch delivers batches in that order (in_order=True,
    the default), so the k-th batch received was the k-th asked for."""
    @functools.wraps(next_index)
    def _next_index(self):
        indices = next_index(self)
        self.__dict__.setdefault("_clinic_asked", []).append(indices)
        return indices
    return _next_index


def watched_next(step):
    @functools.wraps(step)
    def __next__(self):
        seen = getattr(self, "_clinic_seen", None)
        # torchdata's iterator's __next__ calls torch's, both watched: the outer call counts the batch once
        if seen is None or self.__dict__.get("_clinic_in_next"):
            return step(self)
        called = time.monotonic()
        self._clinic_in_next = True
        try:
            return seen.deliver(self, lambda: step(self), lambda batch, delivery: _delivered(self, batch, delivery))
        except StopIteration:
            _ended(self)  # the epoch ran to its end: its batch count is the loader's whole share
            raise
        except Exception as error:
            _raised(self, error, time.monotonic() - called)
            raise
        finally:
            self._clinic_in_next = False
    return __next__


def _raised(iterator, error: Exception, waited_s: float) -> None:
    """The loader's next() raised: how long the loop had waited in it, and where the error was made
    (PyTorch's own timeout raises in _try_get_data; a worker's error is re-raised by `reraise`)."""
    try:
        frames = traceback.extract_tb(error.__traceback__)
        write({"k": "raised", "pid": os.getpid(), "lid": iterator._clinic_tally["lid"], "error": type(error).__name__,
               "waited_s": round(waited_s, 3), "timeout": getattr(iterator, "_timeout", 0),
               "where": frames[-1].name if frames else ""})
    except Exception:
        pass


def _ended(iterator) -> None:
    try:
        write({**_tallied(iterator._clinic_tally, iterator._clinic_seen), "ended": True})
    except Exception:
        pass


def _tallied(tally: dict, seen: Observer) -> dict:
    """The epoch's record: the observer's sums, in the process iterating now (a forked one has its own)."""
    tally.update(pid=seen.pid, batches=seen.batches, samples=seen.samples, main_cpu_s=seen.cpu_s,
                 wait_s=seen.waited_s)
    if seen.batches > 1:  # the steady state, as a script's utilisation is (the first batch also starts workers)
        tally.update(step_s=seen.step_s, steady_wait_s=seen.steady_waited_s)
    return tally


def _delivered(iterator, batch, delivery) -> None:
    try:
        tally = _tallied(iterator._clinic_tally, iterator._clinic_seen)
        write(tally)
        _write_delivered(iterator, tally, batch, delivery.worker)
    except Exception:
        pass


def _write_delivered(iterator, tally: dict, batch, worker: int | None) -> None:
    """What the model receives in this batch: each sample's fingerprint, the training process's
    copy of the dataset as it stands, and /dev/shm's use now."""
    fields = [] if os.environ.get(FIELDS_ENV) else None  # each tensor's rows too, where the grade asks
    asked = getattr(iterator, "_clinic_asked", None)
    indices = _asked_and_got(asked.pop(0), batch) if asked else {}
    write({**indices, "k": "batch", "pid": tally["pid"], "lid": tally["lid"], "epoch": tally["epoch"],
           "workers": tally["workers"], "worker": worker, "fp": Observer.fingerprints(batch, fields), "fields": fields,
           "bytes": fingerprints.sample_bytes(batch), "shape": _first_shape(batch),
           "ds": fingerprints.dataset_state(getattr(iterator, "_dataset", None)),
           "shm_mb": fingerprints.shm_used_mb()})


def _asked_and_got(indices, batch) -> dict:
    """The indices the sampler asked for and the ones the batch's index field holds."""
    try:
        field = batch[int(os.environ[ASKED_ENV])]
        return {"asked": [int(i) for i in indices], "got": [int(i) for i in field.tolist()]}
    except Exception:
        return {}


def _first_shape(batch) -> list[int] | None:
    """The shape of the batch's first tensor (a dict's first value, a tuple's first item): what a
    compiled step guards on."""
    for _ in range(4):
        if hasattr(batch, "shape"):
            return list(batch.shape)
        if isinstance(batch, dict):
            batch = next(iter(batch.values()), None)
        elif isinstance(batch, (list, tuple)):
            batch = batch[0] if batch else None
        else:
            return None
    return None
