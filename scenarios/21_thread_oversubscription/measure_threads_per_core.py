"""Scenario 21, measurement: throughput and CPU per sample against the threads per core.

    python scenarios/21_thread_oversubscription/measure_threads_per_core.py

broken.py's augmentation with as many workers as cores, each worker's OpenCV, BLAS and
OpenMP pools set to 1, 2 and 4 threads (fixes/worker_threads.limit_threads): 1, 2 and 4
threads per core.  Where the machine has 2 cores, 2 threads per worker is what the
libraries choose by themselves (broken.py).  The configurations take turns, three rounds
of 12 samples each (each epoch timed whole, its workers' start included), so that the
machine's load falls on all of them; each prints its
median samples/s with the lowest and highest, and the workers' CPU seconds per sample
(threads that wait by spinning burn CPU without loading anything).  The census of busy
threads is broken.py's: these epochs are too short for it.  The ratios divide
each median by that of one thread per worker: they hold on a faster or busier machine,
where samples/s would not.  CPU per sample is the steadier of the two: it does not depend on
what else the machine runs, only on the threads that wait.
"""
import functools

from _augment import compare, median, one_worker_per_core
from broken import AugmentedPhotos
from fixes.worker_threads import limit_threads
from scenarios.host import usable_cores

THREADS_PER_WORKER = (1, 2, 4)


def pools_of(threads, worker_id):
    limit_threads(threads)


def main():
    workers = one_worker_per_core()  # compare() starts as many workers as cores
    cores, why = usable_cores()
    print(f"{workers} workers on {cores} cores ({why})")
    configurations = {threads: functools.partial(pools_of, threads) for threads in THREADS_PER_WORKER}
    runs = compare(configurations, AugmentedPhotos())
    base = median(rate for rate, _ in runs[1])
    base_cpu = median(per_sample for _, per_sample in runs[1])
    for threads, rounds in runs.items():
        rates = [rate for rate, _ in rounds]
        cpu = median(per_sample for _, per_sample in rounds)
        print(f"pools of {threads} per worker, {threads * workers / cores:g} threads per core: "
              f"{median(rates):6.1f} samples/s (lowest {min(rates):.1f}, highest {max(rates):.1f}), "
              f"{1000 * cpu:.0f} ms CPU per sample")
        print(f"metric samples_per_s_{threads}_per_core={median(rates):.3f}")
        print(f"metric cpu_ms_per_sample_{threads}_per_core={1000 * cpu:.1f}")
        if threads > 1:
            print(f"metric ratio_{threads}_per_core={median(rates) / base:.3f}")
            print(f"metric best_ratio_{threads}_per_core={max(rates) / min(r for r, _ in runs[1]):.3f}")
            print(f"metric cpu_ratio_{threads}_per_core={cpu / base_cpu:.3f}")


if __name__ == "__main__":
    main()
