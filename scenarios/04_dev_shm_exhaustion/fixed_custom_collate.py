"""Scenario 04, fixed: the plan also covers a hand-written collate_fn.

    python scenarios/04_dev_shm_exhaustion/fixed_custom_collate.py

broken_send_hang.py's collate_fn with fixed.py's loop: the batch is measured through that
collate_fn, the settings fit the free /dev/shm, and all 640 samples arrive.
"""
from broken_send_hang import stack_crops
from fixed import main

if __name__ == "__main__":
    main(collate_fn=stack_crops)  # FIX: fixed.py's plan measures the batch through this collate_fn
