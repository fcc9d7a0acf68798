"""Scenario 04, fixed: the budget check also covers a hand-written collate_fn.

    python scenarios/04_dev_shm_exhaustion/fixed_custom_collate.py

The collate_fn of broken_send_hang.py, with fixed.py's loader: the batch is
measured through that collate_fn, and all 640 samples arrive.
"""
from broken_send_hang import stack_crops
from fixed import main

if __name__ == "__main__":
    main(collate_fn=stack_crops)
