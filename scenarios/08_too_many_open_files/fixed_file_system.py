"""Scenario 08, the other remedy: broken.py's loop under the `file_system` strategy.

    python scenarios/08_too_many_open_files/fixed_file_system.py

Expect: the very loop of broken.py, unchanged, reads all 313 batches with a flat
descriptor count.  The cost: each kept batch is now a named file
/dev/shm/torch_<worker pid>_*, about 300 of them by the end, removed when the
tensors are freed -- or not, when the job is killed (myth_file_system_leak.py).
"""
import threading

import psutil
import torch.multiprocessing

import broken
from scenarios.instruments import torch_shm_files


def count_shm_files(peak, stop):
    while not stop.wait(0.05):
        workers = [child.pid for child in psutil.Process().children()]
        peak[0] = max(peak[0], len(torch_shm_files(workers)))


def main():
    # FIX: workers hand over blocks by file name, not by descriptor (torch's other strategy).
    torch.multiprocessing.set_sharing_strategy("file_system")
    peak, stop = [0], threading.Event()
    watcher = threading.Thread(target=count_shm_files, args=(peak, stop), daemon=True)
    watcher.start()
    try:
        broken.main()
    finally:
        stop.set()
        watcher.join()
        print(f"metric shm_files_peak={peak[0]}")


if __name__ == "__main__":
    main()
