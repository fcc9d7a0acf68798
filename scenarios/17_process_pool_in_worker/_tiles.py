"""The data of scenario 17, imported by its scripts: samples stored as compressed tiles.

A sample is TILES_PER_SAMPLE zlib-compressed uint8 tiles, as chunked image and volume
formats store them.  decode_tile() inflates one and averages it down to a small float32
tile; zlib and numpy do that work in C with the GIL released, so threads can overlap it.
"""
import zlib

import numpy as np

NUM_SAMPLES = 32
TILES_PER_SAMPLE = 4
TILE_SHAPE = (256, 1024)  # 256 KiB of pixels per tile: a few milliseconds to decode
DOWNSAMPLE = 8
DISTINCT_TILES = 8  # compressing is slow; each sample is its own ordered pick of these


def make_samples(seed=17):
    """NUM_SAMPLES lists of compressed tiles, the same bytes on every run."""
    rng = np.random.default_rng(seed)
    blobs = [zlib.compress(rng.integers(0, 16, TILE_SHAPE, dtype=np.uint8).tobytes(), 1)
             for _ in range(DISTINCT_TILES)]
    return [[blobs[(3 * i + 5 * k * (1 + i // DISTINCT_TILES)) % DISTINCT_TILES] for k in range(TILES_PER_SAMPLE)]
            for i in range(NUM_SAMPLES)]


def decode_tile(blob):
    pixels = np.frombuffer(zlib.decompress(blob), dtype=np.uint8).reshape(TILE_SHAPE)
    h, w = TILE_SHAPE
    return pixels.reshape(h // DOWNSAMPLE, DOWNSAMPLE, w // DOWNSAMPLE, DOWNSAMPLE).mean(axis=(1, 3), dtype=np.float32)
