"""Scenario 06, diagnosis step 2 (and a measured piece of advice): rerun with num_workers=0.

    python scenarios/06_worker_killed_by_signal/measure_num_workers_0.py

The common answer, which "A deep dive into PyTorch DataLoader with
Multiprocessing" quotes: set num_workers=0 and the issue will be gone.  A native
crash does not go away: it now kills the training process itself, and PyTorch
has no chance to say anything.  With faulthandler on (here in code; `python -X
faulthandler` does the same) the dying process prints its stack, decode() and
its line included; in-process, gdb can show the C frames too (README).  The
training loop runs in a child process only so that this script survives to
remove its temporary files.
Expect "Fatal Python error: Segmentation fault", then the exit with SIGSEGV.
"""
import faulthandler
import multiprocessing
import signal
import sys
import tempfile

from torch.utils.data import DataLoader

from _record_files import write_record_files
from broken import FILES, RecordDataset


def train_without_workers(folder):
    faulthandler.enable(all_threads=False)
    batches = sum(1 for _ in DataLoader(RecordDataset(folder), batch_size=16))
    print(f"read {batches} batches")


def main():
    with tempfile.TemporaryDirectory() as folder:
        write_record_files(folder, FILES)
        training = multiprocessing.get_context("fork").Process(
            target=train_without_workers, args=(folder,))
        training.start()
        training.join()
    if training.exitcode == 0:
        print("num_workers=0 read every file: the crash went away")
        return
    died_of = signal.Signals(-training.exitcode) if training.exitcode < 0 else None
    print(f"metric exit_signal={-training.exitcode if died_of else 0}")
    sys.exit(f"with num_workers=0 the training process itself died "
             f"({died_of.name if died_of else f'exit status {training.exitcode}'}): "
             "the crash did not go away")


if __name__ == "__main__":
    main()
