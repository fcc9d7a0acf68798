"""Scenario 27, measurement: host-to-device copies of the same batches, pageable against pinned.

    python -m scenarios run 27 --variant measure_pinned_vs_pageable     # needs a CUDA GPU

Batches of 64 images of 3×224×224 float32 (38.5 MB) from 2 workers, copied with
`.to("cuda", non_blocking=True)` and timed with CUDA events around each copy: the loader
without and with pin_memory=True, twice each, interleaved.  From pageable memory the driver
first copies through a pinned buffer of its own, and the CPU waits for the copy.
"""
import torch
from torch.utils.data import DataLoader, Dataset

from scenarios.host import cannot_run, cuda_problem_here
from scenarios.instruments import CpuWait

BATCHES, BATCH = 12, 64


class Images(Dataset):
    def __init__(self):
        self.image = torch.rand(3, 224, 224)

    def __len__(self):
        return BATCHES * BATCH

    def __getitem__(self, index):
        return self.image + index  # a new tensor per sample, as a decoder makes


def copy_rate_gbps(pin: bool) -> float:
    loader = DataLoader(Images(), batch_size=BATCH, num_workers=2, pin_memory=pin)
    seconds, moved = 0.0, 0
    for n, batch in enumerate(loader):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        on_gpu = batch.to("cuda", non_blocking=True)
        end.record()
        end.synchronize()
        if n:  # the first copy pays for setting things up
            seconds += start.elapsed_time(end) / 1000
            moved += on_gpu.numel() * on_gpu.element_size()
    return moved / seconds / 1e9


def main():
    if problem := cuda_problem_here():
        cannot_run(problem)
    torch.cuda.init()
    waits = CpuWait()
    waits.start()
    rates = {False: [], True: []}
    for _ in range(2):
        for pin in (False, True):
            rates[pin].append(copy_rate_gbps(pin))
    pageable, pinned = max(rates[False]), max(rates[True])
    print(f"metric cpu_wait_share={waits.share():.3f}")
    print(f"metric pageable_gbps={pageable:.1f}")
    print(f"metric pinned_gbps={pinned:.1f}")
    print(f"metric pinned_to_pageable={pinned / pageable:.1f}")
    print(f"host to device, best of 2: pageable {pageable:.1f} GB/s, pinned {pinned:.1f} GB/s "
          f"({pinned / pageable:.1f}x) on {torch.cuda.get_device_name()}")


if __name__ == "__main__":
    main()
