"""What users paste without an error text, named at the level its evidence allows (issue 35): the
same "random" value printed in groups of equal size (the workers drew the same numbers: 12), printed
batches of indices holding each index the same k times (k copies of the dataset: 13), a data
time that is most of each step (the step waits for its batches: 07 or 28), Lightning's warning that
a loader has few workers (advice Lightning gives whether or not loading is the bottleneck).
`explain` adds these to the findings its error texts give."""
from __future__ import annotations

import re
import statistics
from collections import Counter

from scenarios.clinic.doctor import checks
from scenarios.clinic.doctor.findings import Finding

# A printed value: digits in it, no words of a log line (a progress bar, a loss) around it.
VALUE = re.compile(r"^[\s\[\](),.\-+eE\d]*\d[\s\[\](),.\-+eE\d]*$|^\s*(?:tensor|array)\(.*\d.*\)\s*,?$")
DATA_TIME = re.compile(r"\bdata[_ ]?time[\s:=]+([\d.]+)", re.I)
STEP_TIME = re.compile(r"(?<!\w)(?<!data )(?:batch[_ ]?)?time[\s:=]+([\d.]+)", re.I)
INDEX_BATCH = re.compile(r"^(?:Out:\s*)?\[?\s*tensor\(\[([\d,\s]+)\]\)[,\]]*$|^\[([\d\s,]+)\]$")
ONE_LIST = re.compile(r"^(?:Out(?:\[\d+\])?:\s*)?\[tensor\(")  # list(loader) printed: `[tensor([6, 0]),`
LIGHTNING_FEW_WORKERS = re.compile(r"does not have many workers which may be a bottleneck")


def _check(scenario: str):
    return next(c for c in checks.CHECKS if c.SCENARIO == scenario)


def _finding(scenario: str, name: str, level: str, evidence: str, why: str) -> Finding:
    check = _check(scenario)
    cause = (check.__doc__ or "").strip().splitlines()[0]
    return Finding(scenario, level, name, f"{evidence} ({cause}) [{level}: {why}]", check.FIXES[name])


def _runs(lines: list[str]) -> list[tuple[str, int]]:
    """(value, how many times in a row) of the printed values, in order."""
    runs = []
    for line in (line.strip() for line in lines if line.strip()):
        if runs and runs[-1][0] == line:
            runs[-1] = (line, runs[-1][1] + 1)
        else:
            runs.append((line, 1))
    return runs


def repeated_draws(lines: list[str]) -> list[Finding]:
    """Printed values that come in runs of one size k >= 2, at least two of them: k processes drew
    the same "random" numbers, as workers whose generator was copied at the fork do."""
    runs = [(value, n) for value, n in _runs(lines) if VALUE.match(value)]
    sizes = [n for _, n in runs if n >= 2]
    if len(sizes) < 2 or len(set(sizes)) != 1 or len(sizes) < len(runs) * 0.8:
        return []
    k = sizes[0]
    return [_finding("12", "repeated-draws", "likely",
                     f"{len(sizes)} printed values each {k} times in a row ({runs[0][0][:60]} …)",
                     f"each value comes {k} times, then the next: {k} processes drew the same numbers, as "
                     "DataLoader workers do whose generator was copied at the fork")]


def _index_batches(lines: list[str]) -> list[list[int]]:
    """The whole numbers of each printed batch: `tensor([4, 9])` or `[4 9]` on a line of its own."""
    found = (INDEX_BATCH.match(line.strip()) for line in lines)
    return [[int(n) for n in re.findall(r"\d+", m[1] or m[2])] for m in found if m]


def repeated_samples(lines: list[str]) -> list[Finding]:
    """Printed batches of sample indices (together 0..n-1) holding every index the same k >= 2 times:
    k copies of the dataset, as an IterableDataset each worker iterates whole gives (13).  Likely
    where the batches are one printed list, list(loader): one epoch; else k epochs print the same."""
    batches = _index_batches(lines)
    counts = Counter(index for batch in batches for index in batch)
    times = set(counts.values())
    # indices, not draws: together they are 0..n-1 (or 1..n), as a dataset's are
    indices = bool(counts) and min(counts) <= 1 and max(counts) - min(counts) + 1 == len(counts)
    if len(batches) < 4 or len(counts) < 4 or len(times) != 1 or min(times) < 2 or not indices:
        return []
    k, one_list = times.pop(), any(ONE_LIST.match(line.strip()) for line in lines)
    evidence = f"{len(batches)} printed batches hold each of {len(counts)} indices {k} times"
    if one_list:
        return [_finding("13", "duplicate-samples", "likely", evidence,
                         f"one printed list of batches, one epoch: every sample came {k} times, as an "
                         f"IterableDataset that each of {k} workers iterates whole delivers it")]
    return [_finding("13", "duplicate-samples", "possible", evidence,
                     f"is this one epoch? Then every sample came {k} times: an IterableDataset that each of {k} "
                     f"workers iterates whole (13); {k} epochs print the same")]


def data_time_share(lines: list[str]) -> list[Finding]:
    """A data time that is most of the step, in at least three of a log's timing lines."""
    shares = []
    for line in lines:
        data, step = DATA_TIME.search(line), STEP_TIME.search(line)
        if data and step and float(step[1]) > 0:
            shares.append(float(data[1]) / float(step[1]))
    if len(shares) < 3 or statistics.median(shares) < 0.5:
        return []
    return [_finding("07", "loading-waits", "possible",
                     f"the data time is {statistics.median(shares):.0%} of the step (median of {len(shares)} lines)",
                     "the step waits for its batches; what do the workers do meanwhile? Waiting on reads from a "
                     "remote or slow store: 07; num_workers=0 or too few for the step, the GPU idle: 28")]


def few_workers(lines: list[str]) -> list[Finding]:
    line = next((line for line in lines if LIGHTNING_FEW_WORKERS.search(line)), None)
    if line is None:
        return []
    return [_finding("28", "gpu-waits-for-data", "possible", line.strip()[:200],
                     "Lightning warns whenever num_workers is below the cores, a bottleneck or not; does the step "
                     "wait for data (the data time against the step's, or the GPU's use)?")]


def printed_findings(lines: list[str]) -> list[Finding]:
    """Indices that repeat are samples delivered again (13), not draws that repeat (12)."""
    return (repeated_samples(lines) or repeated_draws(lines)) + data_time_share(lines) + few_workers(lines)
