"""What users paste without an error text, named at the level its evidence allows (issue 35): the
same "random" value printed in groups of equal size (the workers drew the same numbers: 12), printed
batches of indices holding each index the same k times (k copies of the dataset: 13), a data
time that is most of each step, a profiler's table whose time is mostly the DataLoader's __next__, a GPU's
low utilisation told with words about waiting for data (the step waits for its batches: 07 or 28),
Lightning's warning that a loader has few workers (advice Lightning gives whether or not loading is the
bottleneck); and what each check's `pasted` hook reads (12's workers that print the same draws, 29's ranks
that print the same ids, 31's rank that torchrun stopped).  Never *certain*: a printed value shows what
happened, not why.  `explain` adds these to the findings its error texts give."""
from __future__ import annotations

import re
import statistics
from collections import Counter

from scenarios.clinic.doctor import checks
from scenarios.clinic.doctor.findings import Finding

# A printed value: digits in it, no words of a log line (a progress bar, a loss) around it.
VALUE = re.compile(r"^[\s\[\](),.\-+eE\d]*\d[\s\[\](),.\-+eE\d]*$|^\s*(?:tensor|array)\(.*\d.*\)\s*,?$")
# mmcv's "data_time: 0.81", the ImageNet example's "Data 45.054 (45.054)" beside its step's "Time".
DATA_TIME = re.compile(r"\bdata(?:[_ ]?time)?[\s:=]+([\d.]+)", re.I)
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


# The question that decides between the two lessons of a loop that waits for its batches, and the command that
# measures it.
_WAITS_QUESTION = ("what do the workers do meanwhile? Waiting on reads from a remote or slow store: 07; "
                   "num_workers=0 or too few for the step, the GPU idle: 28. `python -m scenarios doctor FILE.py:"
                   "make_loader` times your loader alone; `python -m scenarios doctor -- python train.py` your run")


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
                     "the step waits for its batches; " + _WAITS_QUESTION)]


def few_workers(lines: list[str]) -> list[Finding]:
    line = next((line for line in lines if LIGHTNING_FEW_WORKERS.search(line)), None)
    if line is None:
        return []
    return [_finding("28", "gpu-waits-for-data", "possible", line.strip()[:200],
                     "Lightning warns whenever num_workers is below the cores, a bottleneck or not; does the step "
                     "wait for data (the data time against the step's, or the GPU's use)?")]


# torch.profiler's row for the loop's wait (dataloader.py names it "enumerate(DataLoader)#<iterator>.__next__",
# cut at 55 characters in key_averages().table()); cProfile's row for the same call (dataloader.py:N(__next__)).
PROFILER_ROW = re.compile(r"enumerate\(DataLoader\)#(_SingleProcess|_MultiProcessing)?[\w.]*")
CPROFILE_ROW = re.compile(r"^\s*[\d/]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s+[\d.]+\s+\S*torch[/\\]utils[/\\]data[/\\]"
                          r"dataloader\.py:\d+\(__next__\)")
CPROFILE_TOTAL = re.compile(r"function calls (?:\(\d+ primitive calls\) )?in ([\d.]+) seconds")
_SHARE = 0.5   # of the profiled time: the loop waited for its batches more than it did anything else


def _profiler_share(lines: list[str]) -> tuple[float, str, str] | None:
    """(share of the profiled time in the loader's __next__, the row, the iterator's kind) from a torch.profiler
    table (its "CPU total %" column) or a cProfile listing (cumtime over the total)."""
    header = next((line for line in lines if "CPU total %" in line and "Name" in line), "")
    percents = [c.strip() for c in re.split(r"\s{2,}", header.strip()) if c.strip().endswith("%")]
    column = percents.index("CPU total %") if "CPU total %" in percents else 0
    for line in lines:
        row = PROFILER_ROW.search(line)
        shares = re.findall(r"([\d.]+)%", line)
        if row and len(shares) > column:
            return float(shares[column]) / 100, line.strip()[:200], row[1] or ""
    total = next((float(m[1]) for m in map(CPROFILE_TOTAL.search, lines) if m), 0.0)
    row = next((m for m in map(CPROFILE_ROW.match, lines) if m), None)
    return (float(row[1]) / total, row.string.strip()[:200], "") if row and total > 0 else None


def loop_waits_in_profile(lines: list[str]) -> list[Finding]:
    """A profile whose time is mostly the loader's __next__: the loop waits for its batches.  Made in the loop
    itself (_SingleProcessDataLoaderIter: num_workers=0), 28's lesson whatever the loading does: workers."""
    found = _profiler_share(lines)
    if not found or found[0] < _SHARE:
        return []
    share, row, kind = found
    evidence = f"{share:.0%} of the profiled time is the loader's __next__: {row}"
    if kind == "_SingleProcess":
        return [_finding("28", "gpu-waits-for-data", "likely", evidence,
                         "the loop builds each batch itself (num_workers=0) and waits for it: workers would build "
                         "the next while the step runs, whatever the loading does (reads from a remote store, "
                         "07, need them too)")]
    return [_finding("07", "loading-waits", "possible", evidence, "the step waits for its batches; " + _WAITS_QUESTION)]


# A utilisation figure of the GPU's (nvidia-smi's "GPU-Util", or told in words) and, anywhere in the text, words
# about waiting for data: a GPU that is low for another reason (a small model, a sync) is not told that way.
GPU_FIGURE = re.compile(r"\bGPU[\w -]{0,30}?(?:at|is|of|:|around|about|~)?\s*~?(\d{1,3}(?:\.\d+)?)\s?%"
                        r"|(\d{1,3})\s?%\s+Default\b", re.I)
WAITING_WORDS = re.compile(r"wait\w* (?:for|on) (?:the )?(?:data|batch|input|loader|IO\b|I/O)"
                           r"|data ?load\w* (?:is )?(?:the )?bottleneck|starv\w*|\bIO[- ]bound"
                           r"|\bslow (?:IO|I/O|disk|storage|data ?load\w*)", re.I)
STORAGE_WORDS = re.compile(r"\b(?:IO|I/O|disk|HDD|NFS|S3|bucket|network|storage|remote|read(?:s|ing)? from)\b", re.I)


def gpu_waits(lines: list[str]) -> list[Finding]:
    """A GPU's utilisation at or below half, in a text that says the loop waits for data."""
    figures = [(float(m[1] or m[2]), line) for line in lines for m in GPU_FIGURE.finditer(line)]
    low = [(figure, line) for figure, line in figures if figure <= 50]
    text = "\n".join(lines)
    if not low or not WAITING_WORDS.search(text):
        return []
    evidence = f"the GPU at {low[0][0]:g} %, with words about waiting for data: {low[0][1].strip()[:160]}"
    slow_store = STORAGE_WORDS.search(text)
    scenario, name = ("07", "loading-waits") if slow_store else ("28", "gpu-waits-for-data")
    return [_finding(scenario, name, "possible", evidence, "is it the loader the GPU waits for? " + _WAITS_QUESTION)]


def _pasted(check, lines: list[str], raw: list[str]) -> list[Finding]:
    try:
        return check.pasted(lines, raw)
    except Exception as error:  # a check that raises is one crashed finding, and the others' readings survive
        return [Finding(check.SCENARIO, "crashed", "pasted", f"its reading of the text raised {error!r}", "")]


def printed_findings(lines: list[str], raw: str = "") -> list[Finding]:
    """Indices that repeat are samples delivered again (13), not draws that repeat (12)."""
    pasted = raw.replace("\r\n", "\n").split("\n") if raw else lines
    hooked = [f for check in checks.CHECKS if hasattr(check, "pasted") for f in _pasted(check, lines, pasted)]
    return ((repeated_samples(lines) or repeated_draws(lines)) + hooked + data_time_share(lines)
            + loop_waits_in_profile(lines) + gpu_waits(lines) + few_workers(lines))
