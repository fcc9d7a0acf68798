"""Scenario 20, myth: "DataLoader workers are daemon processes, so they die with the parent."

    python scenarios/20_orphaned_workers_after_sigkill/myth_daemon_workers.py

PyTorch does start every worker with daemon=True.  In multiprocessing that
means: the parent's exit handler (atexit) terminates them when the parent's
interpreter exits normally.  It is no kernel feature: a parent that dies of a
signal runs no exit handler.  broken.py's job, ended by SIGTERM, the polite
signal a scheduler sends first (Python installs no handler for it, so it kills
the job as outright as SIGKILL does).  Expect the job to print daemon=True for
each worker, and the workers still alive after the watch.
"""
import signal

from torch.utils.data import DataLoader

import broken
from _cancelled_job import cancel_job


class ReportingDaemonFlags(DataLoader):
    def __iter__(self):
        iterator = super().__iter__()
        flags = [worker.daemon for worker in iterator._workers]  # MYTH: daemon=True ends them with the job
        print(f"the job's DataLoader workers: daemon={flags}", flush=True)
        return iterator


def train_reporting_daemon_flags(start_method):
    broken.DataLoader = ReportingDaemonFlags
    broken.train(start_method)


def main():
    left = cancel_job(train_reporting_daemon_flags, "fork", label="sigterm", kill_with=signal.SIGTERM)
    print(f"daemon workers outliving a job ended by SIGTERM: {left}")


if __name__ == "__main__":
    main()
