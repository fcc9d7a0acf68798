"""Scenario 04, fixed, refusing: a batch that no setting fits is refused before any worker starts.

    python scenarios/04_dev_shm_exhaustion/fixed_batch_too_big.py

Batches of 160 crops (17 MiB) in the same 16 MiB /dev/shm: even one worker
prefetching one batch cannot fit, so plan_for_shm refuses, naming the figures
and the remedies (--shm-size, --ipc=host, a smaller batch, num_workers=0).
"""
from fixed import main

if __name__ == "__main__":
    main(batch_size=160)
