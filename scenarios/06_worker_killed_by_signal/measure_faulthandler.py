"""Scenario 06, diagnosis step 1: faulthandler in the workers, and a trail of samples.

    python scenarios/06_worker_killed_by_signal/measure_faulthandler.py

The same crash as broken.py, but each worker turns faulthandler on and notes the
file it is about to decode.  Expect "Fatal Python error: Segmentation fault" with
the worker's stack down to ctypes' string_at() called from decode(), then
PyTorch's "Unexpected segmentation fault" line from the same worker, the line
naming the file that did it: "worker 0 was inside img_00137.rec when the loader
failed", and last the loader's error as broken.py ends (one of the three endings
README's Symptom counts; the worker's lines above are there in all of them).
"""
import sys
import tempfile

from broken import RecordDataset, main
from fixes.native_crash import CrashTrail


class TrailedRecordDataset(RecordDataset):
    def __getitem__(self, index):
        with CrashTrail.inside(self.paths[index].name):
            return super().__getitem__(index)


if __name__ == "__main__":
    sys.tracebacklimit = 0  # the worker's stack is the news here; keep the main's to its messages
    with tempfile.TemporaryDirectory() as trail_dir:
        trail = CrashTrail(trail_dir)
        try:
            main(TrailedRecordDataset, worker_init_fn=trail.worker_init_fn)
        finally:
            for worker_id, sample in trail.last_samples().items():
                print(f"worker {worker_id} was inside {sample} when the loader failed")
