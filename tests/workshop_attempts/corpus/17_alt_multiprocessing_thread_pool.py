"""Swaps multiprocessing.Pool for multiprocessing.pool.ThreadPool, its thread-backed twin with the
same map(): the tiles are still decoded in parallel, inside the worker, by threads, which a
daemonic process may start (zlib releases the GIL while it inflates). The workers stay
daemonic and keep the work: a fix.
"""
from multiprocessing.pool import ThreadPool

import torch
from torch.utils.data import DataLoader, Dataset

from _tiles import NUM_SAMPLES, decode_tile, make_samples


class TiledSamples(Dataset):
    def __init__(self):
        self.samples = make_samples()  # per sample: 4 zlib-compressed tiles

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        with ThreadPool(4) as pool:  # threads, not processes: allowed in a daemonic worker
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
