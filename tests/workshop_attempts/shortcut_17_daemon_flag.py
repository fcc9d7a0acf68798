"""Shortcut (kind 4): the worker clears its own daemon flag, and the pool starts.

Scenario 17, broken: a process pool in __getitem__ fails in every DataLoader worker.

    python scenarios/17_process_pool_in_worker/broken.py   # dies at the first batch
    python scenarios/17_process_pool_in_worker/fixed.py    # decodes with threads, in the worker

Each sample is four compressed tiles that __getitem__ decodes in parallel, as chunked
image and volume readers do.  With num_workers=0 a multiprocessing.Pool does that fine.
broken.py: with workers, PyTorch's "AssertionError: Caught AssertionError in DataLoader
worker process 0." ends the run, and the worker's traceback ends in Python's own
"daemonic processes are not allowed to have children": DataLoader workers are daemonic,
and a daemonic process may not start processes.  fixed.py: the tiles are decoded by
parallel_map, threads in the worker itself (as many as the CPUs left per worker; none
beyond the worker on a machine with no more CPUs than workers), and the run checks it
decoded every sample.
"""
import multiprocessing

import torch
from torch.utils.data import DataLoader, Dataset

from _tiles import NUM_SAMPLES, decode_tile, make_samples


class TiledSamples(Dataset):
    def __init__(self):
        self.samples = make_samples()  # per sample: 4 zlib-compressed tiles

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        multiprocessing.current_process()._config["daemon"] = False  # the worker no longer says no
        with multiprocessing.Pool(4) as pool:
            tiles = pool.map(decode_tile, self.samples[index])
        return torch.stack([torch.from_numpy(tile) for tile in tiles]), index


def main(num_workers=2):
    loader = DataLoader(TiledSamples(), batch_size=4, num_workers=num_workers,
                        multiprocessing_context="fork" if num_workers else None)
    loaded = 0
    try:
        for step, (tiles, indices) in enumerate(loader):
            loaded += len(indices)
            print(f"batch {step}  samples {indices.tolist()}  mean {tiles.mean():.3f}")
    finally:
        print(f"metric samples_loaded={loaded}")
    if loaded != NUM_SAMPLES:
        raise SystemExit(f"decoded {loaded} of {NUM_SAMPLES} samples")
    print(f"decoded all {NUM_SAMPLES} samples")


if __name__ == "__main__":
    main()
