"""Scenario 06, myth check: are Python exceptions in a worker silent?

    python scenarios/06_worker_killed_by_signal/myth_worker_errors_are_silent.py

Seed 001 says an exception in a worker makes it "exit silently".  Here the
header check raises a Python exception inside the worker instead of letting
native code crash: expect "MalformedSample: Caught MalformedSample in DataLoader
worker process 0." with the worker's original traceback and the file's name.
Only a death by signal loses the traceback.
"""
from broken import RecordDataset, main
from fixed import check_record


class CheckingRecordDataset(RecordDataset):
    def __getitem__(self, index):
        check_record(self.paths[index])
        return super().__getitem__(index)


if __name__ == "__main__":
    main(CheckingRecordDataset)
