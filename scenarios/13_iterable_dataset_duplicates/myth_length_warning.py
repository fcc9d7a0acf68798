"""Scenario 13, myth check: "PyTorch warns when the workers duplicate an IterableDataset".

    python scenarios/13_iterable_dataset_duplicates/myth_length_warning.py

broken.py shows PyTorch's "Length of IterableDataset ... was reported to be 30" warning 90
times.  That check (torch/utils/data/dataloader.py, _BaseDataLoaderIter.__next__) compares
the number of *batches* fetched with len(dataset), a number of *samples*.  This is
broken.py with batch_size=8, as training loops have it: the same 4 copies of every record
arrive in 16 batches, fewer than 30, and PyTorch says nothing.
"""
from broken import main

if __name__ == "__main__":
    main(batch_size=8)  # MYTH: with batches of 8, PyTorch still warns about the copies.
