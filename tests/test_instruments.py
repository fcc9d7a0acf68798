"""scenarios/instruments/: the measuring instruments the scripts and the runner share."""
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from conftest import REPO_ROOT
from fixes.memory_in_flight import PAGE, predicted_peak_bytes
from scenarios.host import user_namespaces_work
from scenarios.instruments import (MIB, LoaderMemoryWatch, WorkerMemoryWatch, loader_memory_bytes, open_fd_count,
                                   remove_torch_shm_files, torch_shm_files)
from scenarios.instruments import open_files, processes


class Crops(Dataset):
    """Each sample: a 1 MiB float32 image and a label tensor: batches of 8 are 8 MiB + a page."""

    def __len__(self):
        return 64

    def __getitem__(self, index):
        return torch.full((4, 256, 256), float(index)), torch.tensor(index % 3)


BATCH = 8 * MIB + PAGE


def test_worker_memory_watch_needs_workers():
    with pytest.raises(RuntimeError, match=r"call sample\(\) while the loader's workers run"):
        WorkerMemoryWatch().growth_mb()


def test_a_shared_tensor_counts_once_in_shm_and_not_as_private_memory():
    # Children of earlier tests (a forkserver's server, say) may live on and change: this
    # process's own private bytes are the total less theirs.
    private_before, shm_before, children_before = loader_memory_bytes()
    # Touched only once in /dev/shm: torch.ones() would first fill 16 MiB of anonymous memory,
    # which the allocator may keep after the copy, depending on what the process did before.
    shared = torch.empty(4 * MIB).share_memory_().fill_(1.0)
    private_after, shm_after, children = loader_memory_bytes()
    assert 16 * MIB <= shm_after - shm_before <= 16 * MIB + 4 * PAGE
    own_growth = (private_after - sum(children.values())) - (private_before - sum(children_before.values()))
    assert own_growth < 4 * MIB
    assert children.keys() == children_before.keys()  # sharing starts no process
    del shared


def test_watch_measures_a_real_loader_and_leaves_nothing_running():
    children_before = set(processes._children(os.getpid()))  # earlier tests' (a forkserver's server)
    loader = DataLoader(Crops(), batch_size=8, num_workers=1, prefetch_factor=2,
                        multiprocessing_context="fork")
    watch = LoaderMemoryWatch(interval_s=0.005)
    for images, labels in loader:
        watch.sample()  # besides the thread's samples, one per batch: the peak cannot be missed
    grown = watch.stop()
    assert watch.peak_shm_bytes >= 2 * BATCH  # at least the batch held and the one arriving
    assert watch.peak_worker_bytes >= MIB
    assert grown >= watch.peak_shm_bytes
    assert grown <= predicted_peak_bytes(BATCH, 1, 2) * 1.05
    # Only the watch's own thread: the loader's queue feeder threads end on their own schedule.
    assert not [t for t in threading.enumerate() if t.name == "LoaderMemoryWatch"]
    assert set(processes._children(os.getpid())) <= children_before  # the worker was reaped


@pytest.mark.full  # forkserver workers are found by the doctor's --orphans test in make test
def test_forkserver_workers_are_found_below_the_fork_server(tmp_path):
    # Python 3.14's default: the workers are the fork server's children, and the fork server
    # and resource tracker are no workers.  In a process of its own, so that no fork server
    # outlives the test in pytest's.
    script = textwrap.dedent("""
        import multiprocessing, os, torch
        from torch.utils.data import DataLoader
        from scenarios.instruments import WorkerMemoryWatch, loader_memory_bytes, worker_pids
        multiprocessing.set_forkserver_preload(["torch"])
        loader = DataLoader(list(range(64)), batch_size=8, num_workers=2, persistent_workers=True,
                            multiprocessing_context="forkserver")
        it = iter(loader)
        next(it)
        watch = WorkerMemoryWatch()
        watch.sample()
        print(sorted(w.pid for w in it._workers) == sorted(worker_pids()), len(watch.latest_mb),
              len(loader_memory_bytes()[2]))
    """)
    # TMPDIR: such a process leaves its fork server's pymp-* folder behind, even at a normal exit.
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "TMPDIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "2", "2"]


def test_fd_count_follows_files_opened_and_closed(tmp_path):
    before = open_fd_count()
    files = [open(tmp_path / f"f{i}", "w") for i in range(5)]
    assert open_fd_count() == before + 5
    for f in files:
        f.close()
    assert open_fd_count() == before


def _dead_pid():
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(done.stdout)


def test_shm_files_are_found_by_creator_pid_and_removed_only_once_it_is_gone(tmp_path, monkeypatch):
    monkeypatch.setattr(open_files, "SHM_DIR", tmp_path)  # never touch the real /dev/shm
    dead, alive = _dead_pid(), os.getpid()
    for name in (f"torch_{dead}_1_0", f"torch_{dead}_1_1", f"torch_{alive}_2_0",
                 f"torch_{dead}0_3_0", "other_file"):
        (tmp_path / name).write_bytes(b"x")
    assert [p.name for p in torch_shm_files([dead])] == [f"torch_{dead}_1_0", f"torch_{dead}_1_1"]
    assert torch_shm_files([]) == []
    with pytest.raises(RuntimeError, match="still run: stop the job first"):
        remove_torch_shm_files([dead, alive])
    assert remove_torch_shm_files([dead]) == [f"torch_{dead}_1_0", f"torch_{dead}_1_1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"torch_{alive}_2_0", f"torch_{dead}0_3_0", "other_file"])


USERNS = user_namespaces_work()


@pytest.mark.skipif(not USERNS, reason="needs unprivileged user namespaces for a private /dev/shm")
def test_watch_and_free_space_in_a_private_8_mib_dev_shm():
    # A tmpfs of our own: no other process's /dev/shm files can disturb the figures.
    probe = textwrap.dedent("""
        import os
        from fixes.memory_in_flight import shm_free_bytes
        from scenarios.instruments import MIB, ShmUsageWatch
        print("free", shm_free_bytes() / MIB)
        watch = ShmUsageWatch(interval_s=0.001)
        with open("/dev/shm/ballast", "wb") as f:
            f.write(b"x" * 4 * MIB)
        import time; time.sleep(0.1)
        os.unlink("/dev/shm/ballast")
        print("peak", watch.stop() / MIB)
        print("after", shm_free_bytes() / MIB)
    """)
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
         'mount -t tmpfs -o size=8m tmpfs /dev/shm && exec "$@"', "sh", sys.executable, "-c", probe],
        capture_output=True, text=True, timeout=120,
        cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    figures = dict(line.split() for line in done.stdout.splitlines())
    assert float(figures["free"]) == 8.0
    assert 4.0 <= float(figures["peak"]) <= 4.5
    assert float(figures["after"]) == 8.0


def test_a_process_reads_as_exiting_from_its_exit_on():
    # LoaderMemoryWatch keeps a sample only if no worker was exiting: the exiting flag must
    # read True from the moment a process exits, as a zombie, and once it is gone.
    assert not processes.is_exiting(os.getpid())
    child = os.fork()
    if child == 0:
        os._exit(0)
    try:
        deadline = time.monotonic() + 10
        while not processes.is_exiting(child):  # alive for a moment, then a zombie until reaped
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        os.waitpid(child, 0)
    assert processes.is_exiting(child)
