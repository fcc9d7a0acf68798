"""Scenario 30, measured under the forkserver start method (Python 3.14's default on Linux).

    python scenarios/30_uneven_batches_across_ranks/measure_forkserver.py

The same 2-rank torchrun job, its DataLoader workers started from a fork server
instead of forked from the rank.  Each rank first reads broken.py's split by hand to
its end without training (no collective, so nothing waits) and counts the batches its
workers delivered; then it trains over fixed.py's DistributedSampler loader, as
fixed.py does.  The counts are made in the rank's main process (the sampler, the
Subset), so the workers' start method changes neither the cause nor the fix.
"""
import torch.distributed as dist

from broken import make_loader as split_by_hand
from fixed import make_loader, train
from scenarios.torchrun_ranks import as_torchrun_job

START_METHOD = "forkserver"


def main():
    rank, world = as_torchrun_job(nproc=2, timeout_s=60)  # forkserver starts are slow
    by_hand, sampled = split_by_hand(rank, world), make_loader(rank, world)
    for loader in (by_hand, sampled):
        loader.multiprocessing_context = START_METHOD
    delivered = sum(1 for _ in by_hand)
    steps = train(rank, sampled)
    counts = [None] * world
    dist.all_gather_object(counts, (delivered, steps, sampled.multiprocessing_context.get_start_method()))
    if rank == 0:
        for r, (hand, trained, method) in enumerate(counts):
            print(f"rank {r}: workers started by {method}; split by hand {hand} batches, "
                  f"DistributedSampler {trained} batches trained")
            print(f"metric by_hand_batches_rank{r}={hand}\nmetric sampler_batches_rank{r}={trained}")
        print(f"under {START_METHOD}: the split by hand gave {[c[0] for c in counts]} batches, "
              f"the DistributedSampler {[c[1] for c in counts]}, and training completed", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
