"""Scenario 04, broken worse: the same squeeze with a hand-written collate_fn, and the loop stops.

    python scenarios/04_dev_shm_exhaustion/broken_send_hang.py

broken.py's loop, whose collate_fn builds the batch in ordinary memory: the worker moves
it into /dev/shm only as it sends it, in the queue's feeder thread.  When that fails, the
thread prints the error and drops the batch; the worker lives on, and the training loop
waits for that batch forever.  Expect a "No space left on device" traceback from _feed,
then nothing, until the stall watchdog fires after 10 s and shows the loop in _try_get_data.
"""
import torch

from broken import main


def stack_crops(samples):
    # BUG: this batch reaches /dev/shm only in the feeder thread, which drops it when that fails.
    images, labels = zip(*samples)
    return torch.stack(images), torch.stack(labels)


if __name__ == "__main__":
    main(collate_fn=stack_crops)
