"""Scenario 02, myth check: a collate_fn that drops the Nones.

    python scenarios/02_corrupt_files/myth_filter_none.py

The common follow-up to `return None`: filter the Nones out of the batch, then
default_collate the rest.  It gets past batches with a few bad files, and dies
on the first batch that holds nothing but bad files (here batch 9, ten HTML
error pages in a row): default_collate([]) raises IndexError.
"""
from torch.utils.data import default_collate

from broken import main
from myth_return_none import ReturnNoneDataset


def collate_without_none(batch):
    # MYTH: with the Nones filtered out, every batch collates.
    return default_collate([sample for sample in batch if sample is not None])


if __name__ == "__main__":
    main(ReturnNoneDataset, collate_fn=collate_without_none)
