"""Readers of what a program printed, for the checks' `pasted` hooks (explain): runs of one printed
value, printed batches of a dataset's indices, timing lines, a profiler's table, a GPU's utilisation
told with words about waiting for data.  Each returns what it read; which lesson that shows, and at
what level, is the rule of the check that owns the lesson.  It imports nothing of the engine, so a
check may import it (checks/__init__.py)."""
from __future__ import annotations

import re
from collections import Counter

# A printed value: digits in it, no words of a log line (a progress bar, a loss) around it.
VALUE = re.compile(r"^[\s\[\](),.\-+eE\d]*\d[\s\[\](),.\-+eE\d]*$|^\s*(?:tensor|array)\(.*\d.*\)\s*,?$")
# mmcv's "data_time: 0.81", the ImageNet example's "Data 45.054 (45.054)" beside its step's "Time".
DATA_TIME = re.compile(r"\bdata(?:[_ ]?time)?[\s:=]+([\d.]+)", re.I)
STEP_TIME = re.compile(r"(?<!\w)(?<!data )(?:batch[_ ]?)?time[\s:=]+([\d.]+)", re.I)
INDEX_BATCH = re.compile(r"^(?:Out:\s*)?\[?\s*tensor\(\[([\d,\s]+)\]\)[,\]]*$|^\[([\d\s,]+)\]$")
ONE_LIST = re.compile(r"^(?:Out(?:\[\d+\])?:\s*)?\[tensor\(")  # list(loader) printed: `[tensor([6, 0]),`
# The question that decides between the two lessons of a loop that waits for its batches (07, 28), and the
# commands that measure it.
WAITS_QUESTION = ("what do the workers do meanwhile? Waiting on reads from a remote or slow store: 07; "
                  "num_workers=0 or too few for the step, the GPU idle: 28. `python -m scenarios doctor FILE.py:"
                  "make_loader` times your loader alone; `python -m scenarios doctor -- python train.py` your run")


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


def data_time_shares(lines: list[str]) -> list[float]:
    """The data time over the step time, of each line that prints both."""
    shares = []
    for line in lines:
        data, step = DATA_TIME.search(line), STEP_TIME.search(line)
        if data and step and float(step[1]) > 0:
            shares.append(float(data[1]) / float(step[1]))
    return shares


# torch.profiler's row for the loop's wait (dataloader.py names it "enumerate(DataLoader)#<iterator>.__next__",
# cut at 55 characters in key_averages().table()); cProfile's row for the same call (dataloader.py:N(__next__)).
PROFILER_ROW = re.compile(r"enumerate\(DataLoader\)#(_SingleProcess|_MultiProcessing)?[\w.]*")
CPROFILE_ROW = re.compile(r"^\s*[\d/]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s+[\d.]+\s+\S*torch[/\\]utils[/\\]data[/\\]"
                          r"dataloader\.py:\d+\(__next__\)")
CPROFILE_TOTAL = re.compile(r"function calls (?:\(\d+ primitive calls\) )?in ([\d.]+) seconds")


def profiler_share(lines: list[str]) -> tuple[float, str, str] | None:
    """(share of the profiled time in the loader's __next__, the row, the iterator's kind: "_SingleProcess",
    "_MultiProcessing" or "") from a torch.profiler table (its "CPU total %" column) or a cProfile listing
    (cumtime over the total)."""
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


# A utilisation figure of the GPU's (nvidia-smi's "GPU-Util", or told in words) and, anywhere in the text, words
# about waiting for data: a GPU that is low for another reason (a small model, a sync) is not told that way.
GPU_FIGURE = re.compile(r"\bGPU[\w -]{0,30}?(?:at|is|of|:|around|about|~)?\s*~?(\d{1,3}(?:\.\d+)?)\s?%"
                        r"|(\d{1,3})\s?%\s+Default\b", re.I)
WAITING_WORDS = re.compile(r"wait\w* (?:for|on) (?:the )?(?:data|batch|input|loader|IO\b|I/O)"
                           r"|data ?load\w* (?:is )?(?:the )?bottleneck|starv\w*|\bIO[- ]bound"
                           r"|\bslow (?:IO|I/O|disk|storage|data ?load\w*)", re.I)
STORAGE_WORDS = re.compile(r"\b(?:IO|I/O|disk|HDD|NFS|S3|bucket|network|storage|remote|read(?:s|ing)? from)\b", re.I)


def gpu_waiting(lines: list[str]) -> tuple[float, str, bool] | None:
    """(the first utilisation figure at or below half, its line, whether the text speaks of a slow store) where
    the text also says the loop waits for data; None where it does not."""
    low = [(float(m[1] or m[2]), line) for line in lines for m in GPU_FIGURE.finditer(line)
           if float(m[1] or m[2]) <= 50]
    text = "\n".join(lines)
    if not low or not WAITING_WORDS.search(text):
        return None
    return low[0][0], low[0][1].strip()[:160], bool(STORAGE_WORDS.search(text))
