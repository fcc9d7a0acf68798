"""Readers of what a program printed, for the checks' `pasted` hooks (explain): runs of one printed value,
printed batches of a dataset's indices, a collective's timeout in any release's words (a loop that waits for
its batches: waits.py).  Each returns what it
read; which lesson that shows, and at what level, is the rule of the check that owns the lesson.  It imports
nothing of the engine, so a check may import it (checks/__init__.py)."""
from __future__ import annotations

import re
from collections import Counter

# A printed value: digits in it, no words of a log line (a progress bar, a loss) around it.
VALUE = re.compile(r"^[\s\[\](),.\-+eE\d]*\d[\s\[\](),.\-+eE\d]*$|^\s*(?:tensor|array)\(.*\d.*\)\s*,?$")
INDEX_BATCH = re.compile(r"^(?:Out:\s*)?\[?\s*tensor\(\[([\d,\s]+)\]\)[,\]]*$|^\[([\d\s,]+)\]$")
ONE_LIST = re.compile(r"^(?:Out(?:\[\d+\])?:\s*)?\[tensor\(")  # list(loader) printed: `[tensor([6, 0]),`
# A collective that waited past the process group's timeout, as each release words it: gloo's transport
# (gloo/transport/tcp/unbound_buffer.cc; buffer.cc's "Read timeout" in torch 1.x), NCCL's watchdog for any
# collective (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp; its older "NCCL WARN … Async operation timed
# out"), and the DataLoader's own collective, the seed rank 0 shares as each iterator is made (torch 1.12's
# store; a broadcast in dataloader.py's _share_dist_seed since).
COLLECTIVE_TIMEOUT = re.compile(
    r"Timed out waiting \d+ms for (?:recv|send) operation to complete"
    r"|Watchdog caught collective operation timeout: WorkNCCL\([^)]*OpType=(?P<op>\w+)"
    r"|gloo/transport/tcp/\w+\.cc:\d+\] Read timeout|NCCL WARN \w+ failed: .*Async operation timed out"
    r"|Timed out receiving the shared seed from the distrib\w* store")


def runs(lines: list[str], keep=VALUE.match) -> list[tuple[str, int]]:
    """(line, how many times in a row) of the printed lines `keep` accepts, in order."""
    found = []
    for line in (line.strip() for line in lines if line.strip()):
        if not keep(line):
            continue
        if found and found[-1][0] == line:
            found[-1] = (line, found[-1][1] + 1)
        else:
            found.append((line, 1))
    return found


def index_batches(lines: list[str]) -> list[list[int]]:
    """The whole numbers of each printed batch: `tensor([4, 9])` or `[4 9]` on a line of its own."""
    found = (INDEX_BATCH.match(line.strip()) for line in lines)
    return [[int(n) for n in re.findall(r"\d+", m[1] or m[2])] for m in found if m]


def dataset_indices(lines: list[str]) -> tuple[int, Counter]:
    """(printed batches, how often each index came) where the printed batches' whole numbers together are a
    dataset's indices (0..n-1 or 1..n, at least 4 batches of 4 indices); (0, empty) where they are not."""
    batches = index_batches(lines)
    counts = Counter(index for batch in batches for index in batch)
    contiguous = bool(counts) and min(counts) <= 1 and max(counts) - min(counts) + 1 == len(counts)
    return (len(batches), counts) if len(batches) >= 4 and len(counts) >= 4 and contiguous else (0, Counter())


def one_printed_list(lines: list[str]) -> bool:
    """list(loader) printed whole: one epoch's batches."""
    return any(ONE_LIST.match(line.strip()) for line in lines)
