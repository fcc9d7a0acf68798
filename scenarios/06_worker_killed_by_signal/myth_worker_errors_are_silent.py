"""Scenario 06, myth check: are Python exceptions in a worker silent?

    python scenarios/06_worker_killed_by_signal/myth_worker_errors_are_silent.py

"Why are DataLoader workers exiting unexpectedly?" says that an exception in a
worker makes it exit silently.  Here fixed.py's header check runs inside the
worker, so the damaged file raises a Python exception there instead of letting
native code crash: expect "MalformedSample: Caught MalformedSample in DataLoader
worker process 0." with the worker's original traceback and the file's name.
Only a death by signal loses the traceback.
"""
from broken import RecordDataset, main
from fixed import check_record


class CheckingRecordDataset(RecordDataset):
    def __getitem__(self, index):
        # MYTH: "the worker exits silently" when it raises: it raises here, in a worker.
        check_record(self.paths[index])
        return super().__getitem__(index)


if __name__ == "__main__":
    main(CheckingRecordDataset)
