"""The grading hook inside a DataLoader worker (installed by observe.py, which see): PyTorch's worker
loop wrapped so that every batch it puts on the data queue is counted, with the worker's CPU from
taking the index to handing the batch over, the bytes it read, its random states and its copy of the
dataset's state (fingerprints.py), and the threading locks its dataset reached as the fork copied them.
And each thread's CPU time from /proc (the threads the worker keeps busy), the bytes its sockets
received, the first sampler indices it was asked for, in order (the loader's own record), and what its
loop waited in while a fetch lasted long (blocked.py)."""
from __future__ import annotations

import functools
import os
import time

from scenarios import threads
from scenarios.signal_masks import python_handler, sigterm_disposition
from scenarios.clinic.run import blocked, fingerprints
from scenarios.clinic.run.loop_hook import write

USS_EVERY_S = 0.5
ASKED_MAX = 512  # sampler indices kept per worker: an epoch of 24's, never a large run's every index
# Below ten ticks in all a share is mostly rounding: a queue's feeder thread at 2 ticks of 6 is "a
# quarter" (seen once in a full run of 21's fixed.py, [0.04, 0.02] early, [0.1, 0.02] at its end).
CENSUS_MIN_S = 0.1
READINGS_KEPT = 64  # per worker; past that every other one is dropped, the first and the last kept


def _uss_mb() -> float | None:
    try:
        with open("/proc/self/smaps_rollup") as smaps:
            kib = sum(int(line.split()[1]) for line in smaps if line.startswith(("Private_Clean", "Private_Dirty")))
        return round(kib / 1024, 2)
    except (OSError, ValueError, IndexError):
        return None


def _read_bytes() -> int | None:
    """Bytes this process has passed through read(2) and its kin (/proc/self/io's rchar), cached or not."""
    try:
        with open("/proc/self/io") as io:
            return next(int(line.split()[1]) for line in io if line.startswith("rchar:"))
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _census(record: dict, clock: dict) -> None:
    """The threads busy since the worker's first batch (its one-off start-up left out, as a census
    by `top -H` would), by scenarios/threads.py's rule, whatever the script's own census says: over
    the span to this batch, the longest so far, and every thread's CPU in it."""
    readings = clock.setdefault("thread_readings", [])
    readings.append(threads.thread_cpu_s())
    if len(readings) > READINGS_KEPT:
        readings[1:-1] = readings[2:-1:2]
    used = threads.used(readings[0], readings[-1])
    if sum(used.values()) < CENSUS_MIN_S:
        return
    busy = threads.busy_threads(readings)
    # A pool's threads, besides the thread that runs the worker loop: those that each did a quarter as
    # much as the busiest of them (a pool splits its work evenly; a queue's feeder thread does little).
    pool = threads.busy_threads(readings, leave_out={os.getpid()}, of_busiest=True)
    record["threads"] = len(readings[-1])
    record["busy_threads"], record["pool_threads"] = len(busy), len(pool)
    record["thread_cpu_s"] = [round(cpu, 2) for cpu in sorted(used.values(), reverse=True)[:8]]


def _beside_the_loop_cpu_s(data_queue) -> float:
    """CPU seconds of the threads multiprocessing runs beside the worker loop: the data queue's feeder,
    which pickles each batch (its first one-off 60-90 ms), and the resource sharer, which hands a
    batch's file descriptors over.  Each read from its own clock, to the nanosecond."""
    beside = [getattr(data_queue, "_thread", None)]
    try:
        from multiprocessing import resource_sharer
        beside.append(getattr(resource_sharer._resource_sharer, "_thread", None))
    except (ImportError, AttributeError):
        pass
    total = 0.0
    for thread in beside:
        if getattr(thread, "ident", None) is not None:
            try:
                total += time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
            except (OSError, AttributeError):
                pass  # the thread has ended, or no per-thread clock on this platform
    return total


def _work_cpu_s(data_queue) -> float:
    """The worker's CPU so far on anything but moving batches: the loop's thread and every thread
    it set working (a pool decoding for __getitem__), not the feeder's pickling."""
    return time.process_time() - _beside_the_loop_cpu_s(data_queue)


class _ReceivedBytes:
    """socket.socket's receiving methods, counting the bytes this worker's sockets receive."""
    total = 0

    @classmethod
    def install(cls) -> None:
        import socket
        for name in ("recv", "recv_into", "recvfrom", "recvfrom_into"):
            original = getattr(socket.socket, name, None)
            if original is not None:
                setattr(socket.socket, name, cls._counting(original, name.endswith("_into")))

    @classmethod
    def _counting(cls, original, into: bool):
        @functools.wraps(original)
        def receive(self, *args, **kwargs):
            got = original(self, *args, **kwargs)
            try:
                data = got[0] if isinstance(got, tuple) else got
                cls.total += data if into else len(data)
            except TypeError:
                pass
            return got
        return receive


def _asked(item, clock: dict) -> None:
    """The sampler's indices in the index queue's item (send_idx, indices): the loader's own record
    of the order it asked for, the first ASKED_MAX of them (24 compares orders)."""
    try:
        send_idx, indices = item[0], item[1]
        if isinstance(indices, tuple) and len(indices) == 2 and isinstance(indices[1], bool):
            indices = indices[0]  # torchdata's (indices, snapshot)
        kept = clock.setdefault("asked_count", [0])
        if isinstance(send_idx, int) and isinstance(indices, (list, tuple)) and kept[0] + len(indices) <= ASKED_MAX:
            clock.setdefault("asked", []).append([send_idx, [int(i) for i in indices]])
            kept[0] += len(indices)
    except Exception:
        pass


class _CountingQueue:
    """The worker's data queue, counting what the worker loop puts on it (a batch, or an error)."""

    def __init__(self, queue, record, stateful: bool, dataset=None, clock=None):
        self._queue, self._record, self._stateful = queue, record, stateful
        self._dataset, self._clock = dataset, clock if clock is not None else {}
        self._uss_at = time.monotonic()

    def put(self, item, *args, **kwargs):
        try:
            payload = item[1] if isinstance(item, tuple) and len(item) == 2 else None
            if self._stateful and isinstance(payload, tuple) and len(payload) == 3:
                payload = payload[0]  # torchdata puts (data, worker_id, state)
            kind = type(payload).__name__
            if kind not in ("_IterableDatasetStopIteration", "_AckStartup", "_ResumeIteration", "NoneType"):
                record = self._record
                record["errors" if kind == "ExceptionWrapper" else "batches"] += 1
                if "sigterm" not in record:  # after worker_init_fn: what a SIGTERM to the job does to it
                    record["sigterm"], record["sigterm_handler"] = sigterm_disposition(), python_handler()
                record["cpu_s"] = round(time.process_time() - record["cpu_at_start"], 6)
                record["daemon"] = _daemonic()
                now = time.monotonic()
                if now - self._uss_at >= USS_EVERY_S:
                    record["uss_end_mb"], self._uss_at = _uss_mb(), now
                got, got_at = self._clock.pop("got", None), self._clock.pop("got_at", None)
                if got is not None:  # the worker's CPU from taking the index to handing the batch over
                    spent = max(0.0, _work_cpu_s(self._queue) - got)
                    record["fetch_cpu_s"] = round(record.get("fetch_cpu_s", 0.0) + spent, 6)
                if got_at is not None:  # and the wall clock meanwhile: waiting on storage counts there
                    record["fetch_wall_s"] = round(record.get("fetch_wall_s", 0.0) + now - got_at, 6)
                read = _read_bytes()
                if read is not None and record.get("read_at_start") is not None:
                    record["read_bytes"] = read - record["read_at_start"]
                _census(record, self._clock)
                record["socket_bytes"] = _ReceivedBytes.total
                if "asked" in self._clock:
                    record["asked"] = self._clock["asked"]
                write(record)
                if record.get("inherited_locks"):  # still reachable from the dataset now that a batch is made?
                    kept = self._clock["inherited"] & fingerprints.thread_locks(self._dataset)
                    record["inherited_locks"] = len(kept)
                write({"k": "made", "pid": record["pid"], "wid": record.get("worker_id"), "n": record["batches"],
                       "rng": fingerprints.random_states(self._dataset),
                       "ds": fingerprints.dataset_state(self._dataset)})
        except Exception:
            pass
        return self._queue.put(item, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._queue, name)


class _TimedQueue:
    """The worker's index queue: notes the worker's CPU clock (_work_cpu_s) and the time when the worker
    loop takes an index."""

    def __init__(self, queue, clock: dict):
        self._queue, self._clock = queue, clock

    def get(self, *args, **kwargs):
        item = self._queue.get(*args, **kwargs)
        self._clock["got"], self._clock["got_at"] = _work_cpu_s(self._clock.get("data_queue")), time.monotonic()
        _asked(item, self._clock)
        return item

    def __getattr__(self, name):
        return getattr(self._queue, name)


def _daemonic() -> bool | None:
    """Whether this worker is still daemonic, as multiprocessing decides it (a daemonic process may
    start no children); a worker that clears its own flag to start a pool shows here."""
    try:
        import multiprocessing
        return bool(multiprocessing.current_process()._config.get("daemon"))
    except Exception:
        return None


def _started(loop, args: list, kwargs: dict, stateful: bool) -> dict:
    """The worker's record as it starts; its queues are swapped in args/kwargs for ones that count
    and time what passes through them."""
    record = {"k": "worker", "pid": os.getpid(), "ppid": os.getppid(), "batches": 0, "errors": 0,
              "started": time.monotonic(), "cpu_at_start": time.process_time(), "cpu_s": 0.0,
              "uss_start_mb": _uss_mb(), "read_at_start": _read_bytes()}
    try:
        _ReceivedBytes.install()
        names = loop.__code__.co_varnames
        record["worker_id"] = args[names.index("worker_id")] if len(args) > names.index("worker_id") \
            else kwargs.get("worker_id")
        dataset = args[1] if len(args) > 1 else kwargs.get("dataset")
        # the threading locks the worker's dataset holds as the fork left them, before worker_init_fn
        clock: dict = {"inherited": fingerprints.thread_locks(dataset), "data_queue": args[3] if len(args) > 3
                       else kwargs.get("data_queue")}
        record["inherited_locks"] = len(clock["inherited"])
        blocked.watch(clock, lambda waits: write({"k": "blocked", "pid": record["pid"], "at": clock.get("got_at"),
                                                  "waits": waits}))
        if len(args) > 3:
            args[2], args[3] = _TimedQueue(args[2], clock), _CountingQueue(args[3], record, stateful, dataset, clock)
        elif "data_queue" in kwargs:
            kwargs["data_queue"] = _CountingQueue(kwargs["data_queue"], record, stateful, dataset, clock)
        record["uss_end_mb"] = record["uss_start_mb"]
        write(record)
    except Exception:
        pass
    return record


def watched_loop(loop):
    if getattr(loop, "_clinic_watched", False):
        return loop
    stateful = loop.__module__.startswith("torchdata")

    @functools.wraps(loop)
    def _worker_loop(*args, **kwargs):
        args = list(args)
        record = _started(loop, args, kwargs, stateful)
        try:
            return loop(*args, **kwargs)
        finally:
            record["uss_end_mb"] = _uss_mb()
            record["cpu_s"] = round(time.process_time() - record["cpu_at_start"], 6)
            record["ended"] = True
            record["daemon"] = _daemonic()
            write(record)
    _worker_loop._clinic_watched = True
    return _worker_loop
