"""The photos scenario 28 decodes, and the plan that sizes them against the GPU's step.
Imported by broken.py and fixed.py (and by the tests, without a GPU); not run on its own.

Image pipelines keep their photos compressed and pay, for every sample, a JPEG decode and an
augmentation; that is what a batch costs here.  The photos are made once, at the start, at the
smallest side (from SIDES) whose batch, built in this process, costs at least LOAD_TO_STEP
times the GPU's step: the loop without workers then reaches a third of the bound or less on
any card, since the training process builds one batch while the GPU runs one step, however fast
the card is.  The fix needs enough workers that a batch arrives within WORKER_SHARE of a step,
and a core for each of them besides the training process and its pin-memory thread.
"""
import io
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from PIL import Image

OUT, BATCH, PHOTOS = 96, 64, 8  # the augmented crop's side, samples per batch, distinct files
SIDES = (96, 128, 160, 192, 224, 256, 320, 384, 448, 512, 640, 768, 896, 1024, 1280, 1536, 2048, 3072)
LOAD_TO_STEP = 3.0  # a batch costs at least 3 steps: 1/3 of the bound without workers, declared <= 0.5
# Workers side by side are slower than one alone (shared caches, clocks), and a lent H200's cores
# built the same batch in 32 to 75 ms from run to run: a batch every half step leaves that margin.
WORKER_SHARE = 0.5
SPARE_CORES = 2     # the training process (it launches the kernels) and its pin-memory thread


def encoded_photos(side: int, count: int = PHOTOS) -> list[bytes]:
    """`count` JPEG files (quality 90) of side x side: smooth colour fields with grain, which
    compress about as photos do (pure noise would not)."""
    rng = np.random.default_rng(side)
    y, x = np.mgrid[0:side, 0:side] / side
    files = []
    for _ in range(count):
        a, b, c = rng.uniform(0.5, 6, 3)
        fields = [np.sin(a * x + b * y + phase) for phase in rng.uniform(0, 6.3, 3)]
        pixels = 127 + 100 * np.stack(fields, -1) * np.cos(c * x * y)[..., None] + rng.normal(0, 8, (side, side, 3))
        buffer = io.BytesIO()
        Image.fromarray(pixels.clip(0, 255).astype(np.uint8)).save(buffer, "JPEG", quality=90)
        files.append(buffer.getvalue())
    return files


def batch_ms(dataset, batches: int = 5) -> float:
    """Milliseconds to build one batch in this process as a worker does (one torch thread), as a
    loader without workers does: the fastest of `batches`, after one untimed batch that pays the
    imports and first allocations.  The fastest, since a busy moment only adds to a batch's cost."""
    import torch
    from torch.utils.data import DataLoader

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        loader = iter(DataLoader(dataset, batch_size=BATCH, num_workers=0))
        next(loader)
        times = []
        for _ in range(batches):
            started = time.perf_counter()
            next(loader)
            times.append(1000 * (time.perf_counter() - started))
    finally:
        torch.set_num_threads(threads)
    return min(times)


def chosen_side(step_ms: float, batch_ms_at: Callable[[int], float]) -> tuple[int, float] | None:
    """The smallest side whose batch costs LOAD_TO_STEP steps, and that cost; None when even the
    largest is cheaper (a CPU far faster than its GPU)."""
    for side in SIDES:
        cost = batch_ms_at(side)
        if cost >= LOAD_TO_STEP * step_ms:
            return side, cost
    return None


def workers_needed(batch_ms: float, step_ms: float) -> int:
    """Workers that together deliver a batch every WORKER_SHARE of a step: each builds a whole
    batch, so W of them deliver one every batch_ms / W."""
    return math.ceil(batch_ms / (WORKER_SHARE * step_ms))


def cores_problem(workers: int, cores: int, why: str) -> str | None:
    """Why this machine cannot show the fix (too few cores for its workers), or None."""
    if cores >= workers + SPARE_CORES:
        return None
    return (f"the fix needs {workers} workers and {SPARE_CORES} more cores for the training process and its "
            f"pin-memory thread, {workers + SPARE_CORES} in all; this process may use {cores} ({why}): "
            "run on a machine with more cores")


@dataclass(frozen=True)
class Plan:
    step_ms: float
    side: int
    batch_ms: float
    workers: int
    files: list[bytes] = field(repr=False)

    def said(self) -> str:
        return (f"a step alone takes {self.step_ms:.1f} ms; a batch of {BATCH} photos of {self.side} px, decoded "
                f"and augmented, {self.batch_ms:.1f} ms in one process: the fix needs {self.workers} workers")


def plan(step_ms: float, dataset_of: Callable[[list[bytes]], object], cores: tuple[int, str]) -> Plan | str:
    """The photos sized against this step, and the workers the fix needs; or why not here."""
    files = {}

    def cost(side: int) -> float:
        files[side] = encoded_photos(side)
        return batch_ms(dataset_of(files[side]))
    found = chosen_side(step_ms, cost)
    if found is None:
        return (f"a batch of the largest photos ({SIDES[-1]} px) costs under {LOAD_TO_STEP:g} steps of "
                f"{step_ms:.1f} ms here: this CPU is too fast for this GPU to show the GPU waiting")
    side, batch = found
    workers = workers_needed(batch, step_ms)
    return cores_problem(workers, *cores) or Plan(step_ms, side, batch, workers, files[side])
