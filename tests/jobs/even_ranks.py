"""Scenario 30's fixed.py as a healthy job that keeps training for the doctor to examine: the same 2
torchrun ranks, 5 batches each per epoch through a DistributedSampler, epoch after epoch for up to
SECONDS (default 200); every step's all_reduce is met.

    python tests/jobs/even_ranks.py [SECONDS]

This process is torchrun's agent (the launcher's PID); rank 0 prints "started" once training begins.
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scenarios" / "30_uneven_batches_across_ranks"))

from fixed import make_loader, train
from scenarios.torchrun_ranks import as_torchrun_job


def main():
    rank, world = as_torchrun_job(nproc=2, timeout_s=60)
    loader = make_loader(rank, world)
    if rank == 0:
        print("started", flush=True)
    end = time.monotonic() + float(sys.argv[1] if len(sys.argv) > 1 else 200)
    while time.monotonic() < end:
        train(rank, loader)


if __name__ == "__main__":
    main()
