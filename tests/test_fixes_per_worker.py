"""Unit tests for fixes/per_worker.py (scenario 01: fork-inherited lock)."""
import os
import pickle
import signal
import threading
import time

import pytest

from conftest import exit_code_of_child_forked_holding

from fixes import per_worker
from fixes.per_worker import PerWorker

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (Linux, macOS)")


class Resource:
    """Stands in for a cache or a client: a lock that a background thread may hold."""
    built_in = []

    def __init__(self, name="labels"):
        self.name = name
        self.pid = os.getpid()
        self.lock = threading.Lock()
        Resource.built_in.append(os.getpid())


def in_forked_child(job, timeout_s=30):
    """Run `job()` in a forked child; return what it returned. A child that hangs fails the test."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        try:
            os.close(read_end)
            os.write(write_end, pickle.dumps(job()))
        finally:
            os._exit(0)
    os.close(write_end)
    deadline = time.monotonic() + timeout_s
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read_end)
            pytest.fail(f"the forked child hung for {timeout_s} s")
        time.sleep(0.02)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    assert data, "the forked child died before answering"
    return pickle.loads(data)


def test_builds_lazily_and_once_per_process():
    Resource.built_in.clear()
    labels = PerWorker(Resource, "classes")
    assert Resource.built_in == [] and not labels.built_here
    first = labels.get()
    assert labels.get() is first and first.name == "classes"
    assert Resource.built_in == [os.getpid()] and labels.built_here


def test_a_forked_child_builds_its_own_instead_of_the_inherited_locked_one():
    labels = PerWorker(Resource)
    inherited = labels.get()
    holder_started, release = threading.Event(), threading.Event()

    def refresher():  # the parent's background thread, mid-refresh at fork time
        with inherited.lock:
            holder_started.set()
            release.wait(10)

    thread = threading.Thread(target=refresher)
    thread.start()
    holder_started.wait(10)
    try:
        def child():
            own = labels.get()
            return (inherited.lock.acquire(timeout=0.5),  # the hazard: nobody will release it
                    own is not inherited, own.pid == os.getpid(), own.lock.acquire(timeout=5))
        stuck, rebuilt, owned, free = in_forked_child(child)
    finally:
        release.set()
        thread.join()
    assert stuck is False, "the inherited lock should stay locked in the child"
    assert rebuilt and owned and free
    assert labels.get() is inherited  # the parent keeps its own


def test_many_threads_share_one_instance_per_process():
    calls = []
    labels = PerWorker(lambda: calls.append(1) or object())
    results = []
    threads = [threading.Thread(target=lambda: results.append(labels.get())) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1 and len({id(r) for r in results}) == 1


def test_its_own_creation_lock_does_not_cross_fork():
    # The module guards first use with a lock; if a thread of the parent held it at fork
    # time, a child's first get() must not wait forever for it.
    labels = PerWorker(Resource)
    code = exit_code_of_child_forked_holding(per_worker._creation_lock, labels.get)
    assert code is not None, "the child waited for a creation lock held by the parent at fork time"
    assert code == 0


def test_pickling_sends_the_recipe_not_the_resource():
    labels = PerWorker(Resource, "classes")
    built = labels.get()  # holds a lock, which could not be pickled
    copy = pickle.loads(pickle.dumps(labels))
    assert not copy.built_here
    assert copy.get() is not built and copy.get().name == "classes"


def test_an_unpicklable_factory_says_what_to_do():
    labels = PerWorker(lambda: Resource())
    with pytest.raises(TypeError, match="module-level class or function"):
        pickle.dumps(labels)


def test_an_instance_instead_of_a_factory_says_what_to_do():
    with pytest.raises(TypeError, match=r"PerWorker\(LabelCache\) rather than"):
        PerWorker(Resource())
