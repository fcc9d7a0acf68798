"""Scenario 11, myth check: does os.dup() in worker_init_fn give each worker its own file?

    python scenarios/11_shared_file_handle/myth_dup_in_worker_init.py

os.dup() returns a new descriptor *number* for the same open file description,
and the offset lives in the description: the workers still share it.
Expect: the checksum failures of broken.py, about as many.
"""
import os

from torch.utils.data import get_worker_info

from broken import main


def duplicate_file_handle(worker_id):
    dataset = get_worker_info().dataset
    # MYTH: "a descriptor of its own per worker": a duplicate still shares the offset.
    dataset.file = os.fdopen(os.dup(dataset.file.fileno()), "rb")


if __name__ == "__main__":
    main(worker_init_fn=duplicate_file_handle)
