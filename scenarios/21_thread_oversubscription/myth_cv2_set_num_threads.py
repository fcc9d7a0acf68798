"""Scenario 21, myth check: "cv2.setNumThreads(0), one line at the top, saves your training."

    python scenarios/21_thread_oversubscription/myth_cv2_set_num_threads.py

The line that open-mmlab's projects added (mmdetection#6867, "Add A Single Line to Save
Your Life"), called once in the main process before the loader.  Under fork the workers
inherit it, and OpenCV runs in each worker's own thread.  The BLAS pools are left as they
were: a forked worker asks each library for its pool, then broken.py's augmentation with
the line runs against fixed.py's worker_init_fn, taking turns (three rounds of 12 samples,
each epoch timed whole).  Then the same line under forkserver (Python 3.14's default on
Linux): a worker started from the fork server asks OpenCV for its pool.
"""
import cv2
from torch.utils.data import DataLoader

from _augment import compare, median, one_worker_per_core
from broken import AugmentedPhotos
from fixes.worker_threads import limit_worker_threads
from myth_pytorch_sets_one_thread import AskThePools


def pools_in_a_worker(start_method: str) -> dict:
    served = DataLoader(AskThePools(), batch_size=None, num_workers=1, multiprocessing_context=start_method)
    return next(iter(served))


def main():
    cores = one_worker_per_core()
    cv2.setNumThreads(0)  # MYTH: this one line keeps every worker to one thread
    forked = pools_in_a_worker("fork")
    blas = max(threads for pool, threads in forked.items() if pool.startswith("blas:"))
    print(f"in a forked worker: {forked}")
    print(f"metric cv2_threads_in_forked_worker={forked['cv2']}")
    print(f"metric blas_threads_in_forked_worker={blas}")
    runs = compare({"cv2_line": None, "fixed": limit_worker_threads}, AugmentedPhotos())
    rates = {name: [rate for rate, _ in rounds] for name, rounds in runs.items()}
    for name, rounds in runs.items():
        cpu = median(per_sample for _, per_sample in rounds)
        print(f"{name}: {median(rates[name]):.1f} samples/s (lowest {min(rates[name]):.1f}, highest "
              f"{max(rates[name]):.1f}), {1000 * cpu:.0f} ms CPU per sample")
        print(f"metric {name}_cpu_ms_per_sample={1000 * cpu:.1f}")
    print(f"metric cv2_line_ratio={median(rates['cv2_line']) / median(rates['fixed']):.3f}")
    print(f"metric cv2_line_best_ratio={max(rates['cv2_line']) / min(rates['fixed']):.3f}")
    served = pools_in_a_worker("forkserver")
    print(f"metric cv2_threads_in_forkserver_worker={served['cv2']}")
    print(f"with cv2.setNumThreads(0) in the main process a forked worker's BLAS keeps {blas} threads: "
          f"{median(rates['cv2_line']):.1f} samples/s against {median(rates['fixed']):.1f} with every pool "
          f"limited; under forkserver a worker's OpenCV has {served['cv2']} threads on {cores} cores")


if __name__ == "__main__":
    main()
