"""Scenario 13's data and its check: shard files written at run time, and what an epoch must hold.

Imported by broken.py, fixed.py, myth_length_warning.py and measure_uneven_split.py. Each shard
is a small text file of records, one `id value` line per record, named as sharded corpora are
(`shard-00000.txt`, …); record ids run 0..29 across the 5 files, so a count of ids is a count
of samples.
"""
import contextlib
import sys
import warnings
from collections import Counter
from pathlib import Path

SHARDS = 5  # more files than the 4 workers, but not a multiple of 4: the split is uneven
RECORDS_PER_SHARD = 6


def write_shards(root, shards=SHARDS, records=RECORDS_PER_SHARD):
    """Write the shard files under `root`; return their paths in order."""
    paths = []
    for shard in range(shards):
        path = Path(root, f"shard-{shard:05d}.txt")
        ids = range(shard * records, (shard + 1) * records)
        path.write_text("".join(f"{i} {i * 0.5:.1f}\n" for i in ids))
        paths.append(path)
    return paths


@contextlib.contextmanager
def warnings_shown():
    """Count the warnings Python shows, and still show each one as it would be shown."""
    shown, show = [], warnings.showwarning

    def show_and_count(message, category, *args, **kwargs):
        shown.append(f"{category.__name__}: {message}")
        show(message, category, *args, **kwargs)

    warnings.showwarning = show_and_count
    try:
        yield shown
    finally:
        warnings.showwarning = show


def check_epoch(dataset, loader, fetched_ids, batches, shown):
    """Print the epoch's figures; exit with status 1 if it did not hold every record exactly once."""
    copies = Counter(fetched_ids)
    expected = set(range(len(dataset)))
    extra = len(fetched_ids) - len(copies)
    missing = len(expected - set(copies))
    length_warnings = sum("Length of IterableDataset" in text for text in shown)
    sys.stderr.flush()
    print(f"metric records_expected={len(dataset)}")
    print(f"metric records_fetched={len(fetched_ids)}")
    print(f"metric extra_copies={extra}")
    print(f"metric missing_records={missing}")
    print(f"metric batches={batches}")
    print(f"metric loader_len={len(loader)}")
    print(f"metric length_warnings={length_warnings}")
    print(f"{len(fetched_ids)} records fetched in {batches} batches (len(loader) said {len(loader)}); "
          f"PyTorch's length warning shown {length_warnings} times")
    if extra or missing or set(copies) - expected:
        most = max(copies.values())
        sys.exit(f"duplicated samples: {len(fetched_ids)} records fetched for {len(dataset)} in the "
                 f"dataset, {extra} extra copies (up to {most} of one record), {missing} missing")
    print(f"each of the {len(dataset)} records fetched exactly once")
