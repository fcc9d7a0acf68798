"""Scenario 20, broken under forkserver (Python 3.14's default start method on Linux).

    python scenarios/20_orphaned_workers_after_sigkill/broken_forkserver.py

broken.py's job with its loader started by forkserver, as a script that names
no start method gets on Python 3.14.  A forkserver worker's parent is the fork
server, not the training job, and the fork server lives on as long as any
worker holds its end of the server's "alive" pipe, which every worker does.
So PyTorch's parent check never fires, whatever the batches are, and the fork
server and multiprocessing's resource tracker stay as well.  Expect 4 of 4
processes alive when the watch ends, parent check or not.
"""
import multiprocessing

import broken
from _cancelled_job import cancel_job


def train_under_forkserver(start_method):
    # Python 3.14's fork server imports the script's modules once and its workers inherit them;
    # 3.11's preload of __main__ never runs (top README, Versions): ask for torch and numpy.
    multiprocessing.set_forkserver_preload(["torch", "numpy"])
    broken.train(start_method)  # BUG: the workers' parent is the fork server, which outlives the job


def main():
    cancel_job(train_under_forkserver, "forkserver")


if __name__ == "__main__":
    main()
