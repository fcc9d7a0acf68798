"""Scenario 02, myth check: does `return None` from __getitem__ save the epoch?

    python scenarios/02_corrupt_files/myth_return_none.py

"Why are DataLoader workers exiting unexpectedly?" catches the error in
__getitem__ and returns None "to signal failure" (it also prints the error;
left out here, see the README).  The worker gets past the file, but
default_collate cannot stack a None with tensors: the epoch dies in the same
batch, now in the collate step.
"""
from broken import ImageFolderDataset, main


class ReturnNoneDataset(ImageFolderDataset):
    def __getitem__(self, index):
        try:
            return super().__getitem__(index)
        except Exception:
            return None  # MYTH: the DataLoader gets past a sample that returns None.


if __name__ == "__main__":
    main(ReturnNoneDataset)
