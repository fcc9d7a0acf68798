"""Scenario 17, measurement: where the parallel decode is worth having, against num_workers alone.

    python scenarios/17_process_pool_in_worker/measure_throughput.py

Each configuration loads samples of broken.py's dataset (4 compressed tiles each), two to a
batch, and reports samples per second once the first batch is in (so worker start-up is
left out): 32 samples, or 4 where a process pool starts for every sample; the best of three
rounds for the thread configurations.  Each figure is
then divided by that of "workers alone" (num_workers=2, each sample's tiles decoded one
after the other), so the ratios hold on a faster or busier machine, where seconds would
not.  Configurations:
workers alone; fixed.py (parallel_map's own choice of threads per worker); 4 threads per
worker; the thread pool with num_workers=0; broken.py's Pool(4) per sample where it works
(num_workers=0); and the same Pool in workers made non-daemonic (the myth).
"""
import multiprocessing
import time

import torch
from torch.utils.data import DataLoader

from _tiles import decode_tile
from broken import TiledSamples
from fixes.inner_parallelism import parallel_map, usable_cpus

ROUNDS = 3


def serial(blobs):
    return [decode_tile(blob) for blob in blobs]


def fix_default(blobs):
    return parallel_map(decode_tile, blobs)


def four_threads(blobs):
    return parallel_map(decode_tile, blobs, threads=4)


def pool_per_sample(blobs):
    with multiprocessing.Pool(4) as pool:
        return pool.map(decode_tile, blobs)


class DecodedBy(TiledSamples):
    def __init__(self, decode):
        super().__init__()
        self.decode = decode

    def __getitem__(self, index):
        tiles = self.decode(self.samples[index])
        return torch.stack([torch.from_numpy(tile) for tile in tiles]), index


def clear_daemon_flag(worker_id):
    multiprocessing.current_process().daemon = False


def samples_per_s(decode, num_workers, samples, **options):
    dataset = DecodedBy(decode)
    loader = DataLoader(dataset, batch_size=2, sampler=list(range(len(dataset))) * 2, num_workers=num_workers,
                        multiprocessing_context="fork" if num_workers else None, **options)
    batches = iter(loader)
    next(batches)
    started = time.perf_counter()
    for _ in range(samples // 2):
        next(batches)
    seconds = time.perf_counter() - started
    del batches  # shuts the workers down
    return samples / seconds


def main():
    configurations = {  # metric name: (decode, num_workers, samples timed, loader options)
        "workers_alone": (serial, 2, 32, {}),
        "fixed": (fix_default, 2, 32, {}),
        "four_threads_per_worker": (four_threads, 2, 32, {}),
        "threads_without_workers": (four_threads, 0, 32, {}),
        "pool_without_workers": (pool_per_sample, 0, 4, {}),
        "pool_in_non_daemonic_workers": (pool_per_sample, 2, 4, {"worker_init_fn": clear_daemon_flag}),
    }
    print(f"{usable_cpus()} usable CPUs; fixed.py decodes with {max(1, usable_cpus() // 2)} thread(s) per worker")
    # The thread configurations run three rounds, interleaved, and keep their best: a burst of
    # load from another process then lowers one round, not the ratio.  The pools run once.
    rates = {}
    for round_ in range(ROUNDS):
        for name, (decode, workers, samples, options) in configurations.items():
            if round_ == 0 or "pool" not in name:
                rates[name] = max(rates.get(name, 0.0), samples_per_s(decode, workers, samples, **options))
    baseline = rates["workers_alone"]
    for name, rate in rates.items():
        print(f"{name:30s} {rate:7.1f} samples/s   {rate / baseline:5.2f} x workers alone")
        if name != "workers_alone":
            print(f"metric {name}_ratio={rate / baseline:.2f}")


if __name__ == "__main__":
    main()
