"""fixes/worker_threads.py: limit_worker_threads gives each DataLoader worker its share of the
CPUs in every library it finds (OpenCV, each BLAS and OpenMP runtime, torch), sets the
environment for libraries loaded later, needs none of them installed, and refuses a bad count."""
import json
import os
import shutil
import subprocess
import sys
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
