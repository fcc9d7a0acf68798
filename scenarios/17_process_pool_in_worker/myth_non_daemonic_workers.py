"""Scenario 17, myth check: "make the workers non-daemonic" so that the pool may start.

    python scenarios/17_process_pool_in_worker/myth_non_daemonic_workers.py

The advice behind the NoDaemonProcess recipes, applied to DataLoader workers: clear the
worker's daemon flag in worker_init_fn, and broken.py's multiprocessing.Pool starts.  This
script measures what that does and what it leaves: (1) four samples loaded with the flag
cleared, then the processes left once the loader has shut down; (2) a worker killed by
SIGKILL (what the kernel's OOM killer sends) while its pool decodes: its pool processes,
orphaned, are counted and followed until they are gone (this process makes itself their
subreaper, so it sees them and reaps them).  Its throughput is in measure_throughput.py.
"""
import multiprocessing
import os
import signal
import time

import psutil
from torch.utils.data import DataLoader, Subset

from broken import TiledSamples
from scenarios.host import become_subreaper


def clear_daemon_flag(worker_id):
    multiprocessing.current_process().daemon = False  # MYTH: then the worker may start a pool


def running(procs):
    alive = []
    for p in procs:
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p)
        except psutil.NoSuchProcess:
            pass
    return alive


def parent(p):
    try:
        return p.ppid()
    except psutil.NoSuchProcess:
        return None


def descendants():
    return running(psutil.Process().children(recursive=True))


def wait_until(condition, within_s):
    """Seconds until condition() held (within_s if never)."""
    started = time.monotonic()
    while time.monotonic() - started < within_s and not condition():
        time.sleep(0.001)
    return time.monotonic() - started


def keep_loader_errors(errors):
    """The loader's SIGCHLD handler raises "DataLoader worker … is killed" in this thread at any
    child's exit, on whatever line runs then (even inside os.kill): keep what it raises instead."""
    loader_handler = signal.getsignal(signal.SIGCHLD)

    def handler(signum, frame):
        try:
            loader_handler(signum, frame)
        except RuntimeError as err:
            errors.append(str(err).strip())
    signal.signal(signal.SIGCHLD, handler)


def reap(procs):
    """Kill what still runs, then wait for each (orphans adopted by this subreaper included)."""
    for p in procs:
        try:
            p.kill()
            p.wait(timeout=5)
        except psutil.Error:
            pass


def main():
    become_subreaper()
    dataset = TiledSamples()
    loader = DataLoader(Subset(dataset, range(4)), batch_size=2, num_workers=2,
                        multiprocessing_context="fork", worker_init_fn=clear_daemon_flag)
    loaded = sum(len(indices) for _, indices in loader)
    after_shutdown = descendants()
    print(f"(1) non-daemonic workers loaded {loaded} of 4 samples; "
          f"{len(after_shutdown)} processes left once the loader had shut down")

    loader = DataLoader(dataset, batch_size=4, num_workers=2, multiprocessing_context="fork",
                        worker_init_fn=clear_daemon_flag)
    iterator = iter(loader)
    workers = {w.pid for w in iterator._workers}
    pools = {}

    def a_full_pool():  # a worker in the middle of a sample, its four pool processes started
        pools.clear()
        for p in descendants():
            if p.pid not in workers:
                pools.setdefault(p.ppid(), []).append(p)
        return any(len(pool) == 4 for pool in pools.values())

    if wait_until(a_full_pool, within_s=20) >= 20:
        raise SystemExit("no worker started its pool within 20 s")
    victim, pool = next((psutil.Process(pid), pool) for pid, pool in pools.items() if len(pool) == 4)
    errors = []
    keep_loader_errors(errors)
    victim.send_signal(signal.SIGKILL)
    # The kernel re-parents a dead process's children once its last thread has exited.
    wait_until(lambda: all(parent(p) != victim.pid for p in pool), within_s=5)
    orphans = [p for p in pool if parent(p) == os.getpid()]  # a zombie among them exited after the move
    print(f"(2) worker {victim.pid} killed by SIGKILL during a decode: {len(orphans)} of its "
          f"{len(pool)} pool processes orphaned (re-parented to this subreaper)")
    gone_after_s = wait_until(lambda: not running(orphans), within_s=3)
    lived_on = running(orphans)
    print(f"    they exit by themselves once their pipes to the dead worker break (EOF, or BrokenPipeError "
          f"when a tile is done): all gone after {gone_after_s:.3f} s; {len(lived_on)} still running after 3 s")
    print(f"    the training loop got: RuntimeError: {errors[0] if errors else 'nothing'}")
    del iterator  # the loader shuts down its other worker
    leftovers = descendants()
    reap([*pool, *leftovers])
    print(f"metric samples_loaded={loaded}")
    print(f"metric processes_after_shutdown={len(after_shutdown)}")
    print(f"metric orphaned_pool_processes={len(orphans)}")
    print(f"metric orphans_running_after_3s={len(lived_on)}")
    print(f"metric processes_left_at_exit={len(leftovers)}")


if __name__ == "__main__":
    main()
