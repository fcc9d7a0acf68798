"""fixes/inner_parallelism.py: parallel_map keeps order and errors, runs in threads a daemonic
worker may start, sizes itself to the CPUs per worker, and never reuses a pool across fork."""
import multiprocessing
import threading
from concurrent.futures import ThreadPoolExecutor, TimeoutError

import pytest
from torch.utils.data import DataLoader, Dataset

from fixes.inner_parallelism import (can_start_processes, dataloader_workers, parallel_map,
                                     threads_for_this_process, usable_cpus)

FORK = multiprocessing.get_context("fork")


def test_results_keep_the_order_of_the_items():
    items = list(range(50))
    assert parallel_map(lambda x: x * x, items, threads=4) == [x * x for x in items]
    assert parallel_map(lambda x: x, [], threads=4) == []


def test_one_thread_runs_in_the_calling_thread_and_more_run_in_a_pool():
    here = threading.get_ident()
    assert set(parallel_map(lambda _: threading.get_ident(), range(4), threads=1)) == {here}
    names = parallel_map(lambda _: threading.current_thread().name, range(8), threads=3)
    assert all(name.startswith("parallel_map") for name in names)


def test_the_first_error_is_raised_and_a_bad_thread_count_is_refused():
    def fail_on_three(x):
        if x == 3:
            raise ValueError("tile 3 is corrupt")
        return x

    with pytest.raises(ValueError, match="tile 3 is corrupt"):
        parallel_map(fail_on_three, range(6), threads=2)
    with pytest.raises(ValueError, match="at least 1"):
        parallel_map(abs, [1], threads=0)


def test_outside_a_worker_it_may_use_every_cpu_and_start_processes():
    assert dataloader_workers() == 0
    assert threads_for_this_process() == usable_cpus()
    assert can_start_processes()


class WhatAWorkerSees(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, index):
        return (dataloader_workers(), threads_for_this_process(), can_start_processes(),
                sum(parallel_map(abs, [-1, -2, -3, -4], threads=2)))


def test_in_a_dataloader_worker_threads_are_shared_out_and_processes_refused():
    loader = DataLoader(WhatAWorkerSees(), batch_size=None, num_workers=2, multiprocessing_context="fork")
    for workers, threads, may_start, total in loader:
        assert workers == 2
        assert threads == max(1, usable_cpus() // 2)
        assert not may_start  # a DataLoader worker is daemonic: a Pool would raise there
        assert total == 10  # threads do run in a daemonic worker


def _use_pools_in_child(queue, inherited):
    via_fix = sum(parallel_map(abs, [-1, -2, -3], threads=2))
    try:
        inherited_result = inherited.submit(abs, -5).result(timeout=2)
    except TimeoutError:
        inherited_result = "timeout"
    queue.put((via_fix, inherited_result))


def test_a_pool_is_never_reused_across_fork():
    parallel_map(abs, [-1, -2, -3], threads=2)  # the parent's pool exists now
    inherited = ThreadPoolExecutor(max_workers=2)
    list(inherited.map(abs, [-1, -2, -3, -4]))
    queue = FORK.SimpleQueue()
    child = FORK.Process(target=_use_pools_in_child, args=(queue, inherited))
    child.start()
    child.join(30)  # a small put never blocks: join first, so that a failed child fails the test
    inherited.shutdown()
    if child.is_alive():  # leave no process behind, then fail
        child.kill()
        child.join()
    assert child.exitcode == 0
    via_fix, inherited_result = queue.get()
    assert via_fix == 6
    # What the fix avoids: a plain executor made before fork has no threads in the child.
    assert inherited_result == "timeout"
