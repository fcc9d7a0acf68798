"""fixes/worker_threads.py: limit_worker_threads gives each DataLoader worker its share of the
CPUs in every library it finds (OpenCV, each BLAS and OpenMP runtime, torch), sets the
environment for libraries loaded later, needs none of them installed, and refuses a bad count;
and it gives OpenCV 0 for one thread, because cv2.setNumThreads(1) hangs a worker forked after
the parent had run OpenCV's pool."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import cv2
import numpy
import pytest
import torch
from threadpoolctl import threadpool_info
from torch.utils.data import DataLoader, Dataset

from fixes.worker_threads import limit_threads, threads_per_worker, usable_cpus

FIX = Path(__file__).resolve().parents[1] / "fixes" / "worker_threads.py"


def pools() -> dict:
    found = {"cv2": cv2.getNumThreads(), "torch": torch.get_num_threads()}
    found.update({p["filepath"]: p["num_threads"] for p in threadpool_info()})
    return found


class LimitedPools(Dataset):
    def __init__(self, init):
        self.init = init

    def __len__(self):
        return 2

    def __getitem__(self, index):
        numpy.ones((64, 64)) @ numpy.ones((64, 64))  # the BLAS loaded and used before asking
        return self.init(), pools()


def run_in_workers(init, num_workers):
    # cv2, numpy and torch are imported by this module, as by a dataset's: loaded before fork.
    loader = DataLoader(LimitedPools(init), batch_size=None, num_workers=num_workers,
                        multiprocessing_context="fork")
    return list(loader)


def test_in_a_worker_every_pool_gets_the_workers_share_of_the_cpus():
    from fixes.worker_threads import limit_worker_threads
    share = max(1, usable_cpus() // 2)
    for limited, found in run_in_workers(limit_worker_threads, num_workers=2):
        assert set(found.values()) == {share}, found
        assert limited["cv2"] == share and limited["torch"] == share
        assert len(found) >= 4  # cv2, torch, numpy's OpenBLAS, OpenCV's own OpenBLAS, torch's OpenMP


def test_without_the_fix_a_workers_opencv_and_blas_keep_their_machine_sized_pools():
    # The opposite of the test above on the same loader: the fix is what makes it pass.
    if usable_cpus() < 2:
        pytest.skip("one CPU: every default pool is one thread already")
    for _, found in run_in_workers(lambda: None, num_workers=2):
        assert found["torch"] == 1  # PyTorch's own doing, in every worker
        assert found["cv2"] >= 2
        assert max(n for path, n in found.items() if "openblas" in path) >= 2


def _forked_child_finishes(action, limit_s: float) -> bool:
    pid = os.fork()
    if pid == 0:
        try:
            action()
        finally:
            os._exit(0)
    deadline = time.monotonic() + limit_s
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return False
        time.sleep(0.02)
    return True


def _other_threads_fall_asleep(limit_s: float) -> bool:
    me, deadline = str(os.getpid()), time.monotonic() + limit_s
    while time.monotonic() < deadline:
        states = [Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()[0]
                  for tid in os.listdir("/proc/self/task") if tid != me]
        if all(state == "S" for state in states):
            return True
        time.sleep(0.01)
    return False


def _blur():
    cv2.GaussianBlur(numpy.zeros((640, 640, 3), numpy.uint8), (9, 9), 0)  # runs OpenCV's pool


def test_after_the_parent_ran_opencvs_pool_a_forked_worker_still_gets_its_limit():
    if usable_cpus() < 2:
        pytest.skip("one CPU: OpenCV starts no pool to inherit")
    _blur()
    # The hazard needs the pool's threads asleep, waiting for work, when the child is forked:
    # 0.1 s after the blur on a quiet machine, up to 0.8 s with two spinning processes beside
    # it (forked after a fixed 0.5 s, 3 children of 8 then returned).
    assert _other_threads_fall_asleep(limit_s=10)
    # The hazard the fix steps around: cv2.setNumThreads(1) in the child never returns.
    assert not _forked_child_finishes(lambda: (cv2.setNumThreads(1), _blur()), limit_s=3)
    assert _forked_child_finishes(lambda: (cv2.setNumThreads(0), _blur()), limit_s=30)
    # The fix in real workers, bounded by the loader's own timeout.
    from fixes.worker_threads import limit_worker_threads
    loader = DataLoader(LimitedPools(limit_worker_threads), batch_size=None, num_workers=2,
                        multiprocessing_context="fork", timeout=60)
    for limited, found in loader:
        assert found["cv2"] == max(1, usable_cpus() // 2)


def test_outside_a_worker_the_share_is_every_usable_cpu():
    assert threads_per_worker() == usable_cpus()


@pytest.mark.parametrize("bad", [0, -1, 1.5, "1", None])
def test_a_thread_count_below_one_or_not_whole_is_refused(bad):
    with pytest.raises(ValueError, match="at least 1"):
        limit_threads(bad)


def _fresh_interpreter(tmp_path, code: str) -> dict:
    # The file alone, copied as a user would: it imports no other module of this project.
    shutil.copy(FIX, tmp_path / "worker_threads.py")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={"PATH": os.environ.get("PATH", "")})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_it_works_with_none_of_the_libraries_installed(tmp_path):
    found = _fresh_interpreter(tmp_path, (
        "import json, os, sys\n"
        "for name in ('cv2', 'torch', 'threadpoolctl'): sys.modules[name] = None  # as if not installed\n"
        "import worker_threads\n"
        "limited = worker_threads.limit_threads(3)\n"
        "print(json.dumps({'limited': limited, 'env': {k: os.environ[k] for k in worker_threads.ENVIRONMENT}}))\n"))
    assert found["limited"] == {}
    assert found["env"] == dict.fromkeys(["OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                          "OPENCV_FOR_THREADS_NUM"], "3")


def test_a_library_imported_after_the_call_reads_the_environment(tmp_path):
    # A dataset that imports cv2 or numpy lazily, in __getitem__: the limit set before still holds.
    found = _fresh_interpreter(tmp_path, (
        "import json, sys\n"
        "import worker_threads\n"
        "worker_threads.limit_threads(1)\n"
        "assert 'cv2' not in sys.modules and 'numpy' not in sys.modules\n"
        "import cv2, numpy, threadpoolctl\n"
        "print(json.dumps({'cv2': cv2.getNumThreads(),\n"
        "                  'pools': [p['num_threads'] for p in threadpoolctl.threadpool_info()]}))\n"))
    assert found["cv2"] == 1
    assert found["pools"] and set(found["pools"]) == {1}
