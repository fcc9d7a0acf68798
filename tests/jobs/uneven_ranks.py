"""Scenario 30's broken.py as a job that stays hung for the doctor to examine: the same 2 torchrun
ranks, split by hand into 5 and 4 batches, with a process group timeout of 5 minutes instead of 8 s.

    python tests/jobs/uneven_ranks.py

This process is torchrun's agent (the launcher's PID); rank 1 prints "rank 1: ran 4 batches, waiting
…" when it reaches its barrier, and rank 0 then waits in its fifth backward() until killed.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scenarios" / "30_uneven_batches_across_ranks"))

from broken import make_loader, train
from scenarios.torchrun_ranks import as_torchrun_job


def main():
    rank, world = as_torchrun_job(nproc=2, timeout_s=300)
    train(rank, make_loader(rank, world))


if __name__ == "__main__":
    main()
