"""Scenario 20, myth: "PyTorch's workers check their parent and exit when it dies."

    python scenarios/20_orphaned_workers_after_sigkill/myth_workers_check_parent.py

They do check: every MP_STATUS_CHECK_INTERVAL (5 s) a worker with nothing to do
compares os.getppid() with the pid it saw at start.  The check ends the worker
only when its way out is free.  broken.py's job, with one change: its batches
are tensors (PyTorch's default collate), so they travel through shared memory
and only a small handle crosses the pipe.  Expect every worker gone some 5 s
after the SIGKILL.  broken.py's NumPy batches fill the pipe: its workers run the
same check, leave their loop, and then wait forever in their exit for a reader
that is dead.  Under forkserver (measure_forkserver.py) the check never fires.
"""
from torch.utils.data import default_collate

import broken
from _cancelled_job import cancel_job


def train_with_tensor_batches(start_method):
    # MYTH: the parent check ends the workers; with tensor batches (shared memory) nothing blocks it
    broken.stack_arrays = default_collate
    broken.train(start_method)


def main():
    left = cancel_job(train_with_tensor_batches, "fork", label="tensor_batches")
    print(f"with tensor batches, {left} worker(s) outlived the job: the parent check ended the others")


if __name__ == "__main__":
    main()
