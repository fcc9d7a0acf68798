"""Scenario 20, fixed under forkserver (Python 3.14's default start method on Linux).

    python scenarios/20_orphaned_workers_after_sigkill/fixed_forkserver.py

fixed.py's job with its loader started by forkserver.  The workers' parent is
the fork server, so DieWithTrainer cannot ask the kernel for a signal on the
job's death; each worker watches the job's pid from a thread (a pidfd) and
kills itself when the job is gone.  The fork server and the resource tracker
then end by themselves, the tracker after removing the semaphores it was left.
Expect none of the job's 4 processes alive within a second of the kill.
"""
import multiprocessing

import fixed
from _cancelled_job import cancel_job


def train_under_forkserver(start_method):
    # Python 3.14's fork server imports the script's modules once and its workers inherit them;
    # 3.11's preload of __main__ never runs (top README, Versions): ask for torch and numpy.
    multiprocessing.set_forkserver_preload(["torch", "numpy"])
    fixed.train(start_method)  # FIX: DieWithTrainer in each worker watches the job's pid instead


def main():
    cancel_job(train_under_forkserver, "forkserver")


if __name__ == "__main__":
    main()
