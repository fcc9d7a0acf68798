"""Scenario 21, myth check: "PyTorch already gives each worker one thread."

    python scenarios/21_thread_oversubscription/myth_pytorch_sets_one_thread.py

It does, for torch: every DataLoader worker calls torch.set_num_threads(1) before it
loads anything, and on this build that also sets the OpenMP runtime torch ships with.
This asks the workers of a default loader what each library's pool holds: torch's
threads, OpenCV's (cv2.getNumThreads) and every BLAS and OpenMP pool loaded in the
worker (threadpoolctl).  Two other habits are measured the same way:
OMP_NUM_THREADS=1 put into os.environ by a worker_init_fn, after the libraries were
loaded; and OMP_NUM_THREADS=1 exported before Python starts (a fresh interpreter that
imports cv2 and numpy), which OpenCV's own pool does not read.
"""
import os
import subprocess
import sys

import cv2
import numpy  # noqa: F401  (its BLAS is one of the pools asked about)
import torch
from threadpoolctl import threadpool_info
from torch.utils.data import DataLoader, Dataset

from _augment import one_worker_per_core

ASK = ("import cv2, numpy, threadpoolctl; "
       "print(cv2.getNumThreads(), max(p['num_threads'] for p in threadpoolctl.threadpool_info() "
       "if p['user_api'] == 'blas'))")


def pools() -> dict:
    found = {"torch": torch.get_num_threads(), "cv2": cv2.getNumThreads()}
    for pool in threadpool_info():
        found[f"{pool['user_api']}:{pool['prefix']}"] = pool["num_threads"]
    return found


class AskThePools(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, index):
        return pools()


def environ_too_late(worker_id):
    os.environ["OMP_NUM_THREADS"] = "1"  # MYTH: the libraries read it once, when loaded


def in_workers(**options) -> dict:
    loader = DataLoader(AskThePools(), batch_size=None, num_workers=2, **options)
    return next(iter(loader))


def main():
    cores = one_worker_per_core()
    print(f"main process: {pools()}")
    plain, late = in_workers(), in_workers(worker_init_fn=environ_too_late)
    print(f"in a worker: {plain}")
    print(f"in a worker whose worker_init_fn set OMP_NUM_THREADS=1: {late}")
    exported = subprocess.run([sys.executable, "-c", ASK], env={**os.environ, "OMP_NUM_THREADS": "1"},
                              capture_output=True, text=True, check=True).stdout.split()
    print(f"a fresh interpreter with OMP_NUM_THREADS=1 exported: cv2 {exported[0]}, BLAS {exported[1]}")
    blas = max(n for name, n in plain.items() if name.startswith("blas:"))
    openmp = [n for name, n in plain.items() if name.startswith("openmp:")]
    print(f"metric cores={cores}")
    print(f"metric torch_threads_in_worker={plain['torch']}")
    print(f"metric openmp_threads_in_worker={max(openmp, default=0)}")
    print(f"metric cv2_threads_in_worker={plain['cv2']}")
    print(f"metric blas_threads_in_worker={blas}")
    print(f"metric blas_threads_after_environ_in_init={max(n for k, n in late.items() if k.startswith('blas:'))}")
    print(f"metric cv2_threads_with_omp_exported={exported[0]}")
    print(f"metric blas_threads_with_omp_exported={exported[1]}")
    print(f"in each worker torch has {plain['torch']} thread, OpenCV {plain['cv2']} and the BLAS {blas}, "
          f"on {cores} cores")


if __name__ == "__main__":
    main()
