"""A reader of what a program printed, for the checks' `pasted` hooks (explain): a loop that waits for its
batches: timing lines, a profiler's row, a GPU told idle, with the workers and the store the text names
(`loop_waits`).  It returns what it read; which lesson that shows, and at what level, is the rule of the check
that owns the lesson (07, 28).  It imports nothing of the engine, so a check may import it (checks/__init__.py)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from statistics import median

# The question that decides between the two lessons of a loop that waits for its batches (07, 28), and the
# commands that measure it.
WAITS_QUESTION = ("what do the workers do meanwhile? Waiting on reads from a remote or slow store: 07; "
                  "num_workers=0 or too few for the step, the GPU idle: 28. `python -m scenarios doctor FILE.py:"
                  "make_loader` times your loader alone; `python -m scenarios doctor -- python train.py` your run")


@dataclass(frozen=True)
class Wait:
    """What a text shows of a loop that waits for its batches, and what else in it bears on why."""
    kind: str                 # "profile", "timing" (data and step times, or their share told in words), "gpu" (words)
    evidence: str             # what was read, as the finding quotes it
    single_process: bool      # a profiled row of _SingleProcessDataLoaderIter: that loader has num_workers=0
    workers: frozenset        # the num_workers values the text prints
    storage: bool             # words about a slow or remote store

    @property
    def no_workers(self) -> bool:
        return self.single_process or self.workers == {0}


def loop_waits(lines: list[str], share: float) -> Wait | None:
    """The first sign, in this order, that the loop waits for its batches more than `share` of its time: a profile
    mostly in the loader's __next__; printed data times most of the step's; that share told in words; a low GPU
    told with words about waiting for data.  None where the text shows none."""
    profiled = profiler_share(lines)
    found = (("profile", f"{profiled[0]:.0%} of the profiled time is the loader's __next__: {profiled[1]}")
             if profiled and profiled[0] >= share else None)
    found = found or _printed_times(timings(lines), share) or _told(lines, share) or _gpu_told(lines)
    if found is None:
        return None
    text = "\n".join(line for line in lines if not _FRAME.match(line))
    workers = frozenset(int(next(g for g in m.groups() if g)) for m in WORKERS.finditer(text))
    return Wait(found[0], found[1], bool(profiled) and profiled[2] == "_SingleProcess", workers,
                bool(STORAGE_WORDS.search(text)))


# A frame of a traceback: its file's path says "storage" or "io" and nothing about the user's store.
_FRAME = re.compile(r'^\s*File "|^\s+\S+\.py\b')
# num_workers as code, configs and sentences print it: `num_workers=0`, mmcv's `workers_per_gpu: 2`, `--workers 8`,
# "with 0 workers", "workers at 0".
# Not PyTorch's own advice, "Rerunning with num_workers=0 may give better error trace", nor a setting tried.
WORKERS = re.compile(r"(?<!Rerunning with )(?<!tried )(?<!trying )(?<!try )"
                     r"(?:\b\w*num[_-]?workers?['\"]?\s*[=:]\s*(\d+)|\bworkers_per_gpu['\"]?\s*[=:]\s*(\d+)"
                     r"|--workers[= ](\d+)|\bworkers\s*[=:]\s*(\d+)|\bworkers (?:at|to) (\d+)\b"
                     r"|\b(\d+) (?:data ?loader |loader )?workers\b)", re.I)
STORAGE_WORDS = re.compile(r"\b(?:(?-i:IO|I/O)|disk|HDD|NFS|S3|GCS|bucket|Lustre|remote|object store|storage"
                           r"|network (?:file ?system|drive|share|storage|disk)|read(?:s|ing)? from)\b", re.I)


# A time: seconds unless its unit says milliseconds; a running average in brackets may follow it (the ImageNet
# example's "Data 10.404 (5.632)"; timm's "Time: 0.455s,  562.41/s  (0.455s,  562.41/s)" with a rate between).
_SECONDS = r"([\d.]+)\s*(ms|s|sec)?\b(?:,?\s+[\d.]+/s)?(?:\s*\(\s*([\d.]+)\s*(ms|s|sec)?\s*[,)])?"
# The data time: mmcv's and detectron2's `data_time: 0.81`, the ImageNet example's and timm's `Data 45.054`, a loop's
# own `data: 0.40s`.
DATA_TIME = re.compile(r"\bdata(?:[_ ]?(?:load(?:ing)?[_ ]?)?time)?[\s:=]+" + _SECONDS, re.I)
# The step's: `time: 0.455`, `batch_time`, `iter_time`; `iter: 0.45s` and `step: 0.45s` only with a unit
# (detectron2's `iter: 19` counts iterations).
STEP_TIME = re.compile(r"(?<![\w/])(?<!data )(?:batch|iter(?:ation)?|step|train)?[_ ]?time[\s:=]+" + _SECONDS, re.I)
STEP_WITH_UNIT = re.compile(r"\b(?:iter(?:ation)?|step|batch)[\s:=]+([\d.]+)\s*(ms|s|sec)\b()()", re.I)


@dataclass(frozen=True)
class Timing:
    """A printed line's data and step times, in seconds, with their running averages where it prints them."""
    data: float
    step: float
    data_average: float | None
    step_average: float | None

    @property
    def share(self) -> float:
        return self.data / self.step


def _seconds(value: str, unit: str | None) -> float:
    return float(value) / (1000 if (unit or "").lower() == "ms" else 1)


def timings(lines: list[str]) -> list[Timing]:
    """The data and step times of each line that prints both."""
    found = []
    for line in lines:
        data = DATA_TIME.search(line)
        steps = [m for m in (STEP_TIME.search(line), STEP_WITH_UNIT.search(line)) if m]
        if not (data and steps):
            continue
        step = min(steps, key=lambda m: m.start())
        try:
            times = [_seconds(m[1], m[2]) for m in (data, step)]
            averages = [_seconds(m[3], m[4]) if m[3] else None for m in (data, step)]
        except ValueError:   # "1.2.3": no number
            continue
        # The step's time holds the data's (mmcv, detectron2, timm, the ImageNet example): a data time beyond it is
        # another figure read as one ("data: 50000 samples  time: 3600s").
        if 0 < times[1] and times[0] <= times[1] * 1.01:
            found.append(Timing(times[0], times[1], *averages))
    return found


def _printed_times(found: list[Timing], share: float) -> tuple[str, str] | None:
    """("timing", what was read) where printed data times are most of the step: the median of three lines or more
    (a run's first batch, slow while the workers start, moves no median), both of two, or one whose running average
    says so too.  Or waits that come in bursts (workers too few or too slow for the step: now and then a batch holds
    the loop for seconds), summed over the lines after the first and after each run's or epoch's first step (its
    average equal to its value)."""
    if len(found) >= 2 and (median if len(found) >= 3 else min)(t.share for t in found) >= share:
        return "timing", (f"a data time of {median(t.data for t in found):.3g} s against a step of "
                          f"{median(t.step for t in found):.3g} s (the median of {len(found)} printed lines)")
    steady = [t for t in found[1:] if t.data_average != t.data]
    waited, took = sum(t.data for t in steady), sum(t.step for t in steady)
    if len(steady) >= 3 and waited >= share * took:
        return "timing", (f"the loop waited for data {waited:.3g} s of {took:.3g} s over {len(steady)} printed steps, "
                          f"{max(t.data for t in steady):.3g} s at once the longest")
    # One line alone may be a run's first: its running average must cover more steps (at the first it equals the
    # value) and say so too.
    one = found[0] if len(found) == 1 and found[0].data_average not in (None, found[0].data) else None
    if one and min(one.share, one.data_average / (one.step_average or one.step)) >= share:
        return "timing", (f"a data time of {one.data:.3g} s, on average {one.data_average:.3g} s, against a step of "
                          f"{one.step:.3g} s" + (f", on average {one.step_average:.3g} s" if one.step_average else ""))
    return None


def _told(lines: list[str], share: float) -> tuple[str, str] | None:
    """("timing", what was read) where a sentence tells the share ("data loading took 80% of the step"), or that
    the loader's next batch takes seconds or a long time to come; none in a text about a hang."""
    told = next((m for line in lines for m in (p.search(line) for p in STATED_SHARE)
                 if m and float(m["share"]) / 100 >= share and not NEGATED.search(m[0])), None)
    if told:
        return "timing", (f"the text says the loop waits for data {told['share']} % of its time: "
                          + told.string.strip()[:160])
    slow = next((m for m in map(SLOW_NEXT.search, lines) if m and float(m["seconds"] or 1) >= 1
                 and not NEGATED.search(m[0])), None)
    if slow and not HANG_WORDS.search("\n".join(lines)):
        return "timing", "the text says each batch is slow to come: " + slow.string.strip()[:160]
    return None


# A share of the time told in words: "data loading took 80% of the step", "85% of the time is spent waiting for
# data", within one clause.
_DATA_WORDS = (r"(?:data ?load\w*|data ?loader\w*|data[_ ]time|input pipeline|next\(\w*\(?\w*loader\w*\)?\)"
               r"|(?:wait\w*|fetch\w*|load\w*|read\w*) (?:for |on )?(?:the )?(?:data|batch\w*|input)\b)")
_SHARE_OF = (r"(?P<share>\d{1,3}(?:\.\d+)?)\s?%\s*of\s+(?:(?:the|my|each|every|a|total|overall|training|wall[- ]?"
             r"clock)\s+)*(?:step|iter\w*|time|train\w*|epoch|batch|run\w*)\b")
_CLAUSE_GAP = r"(?:[\s,()'\"-]+[\w'/-]+){0,7}?[\s,()'\"-]+"    # up to seven words, no stop, colon or semicolon
STATED_SHARE = tuple(re.compile(pattern, re.I) for pattern in (_DATA_WORDS + _CLAUSE_GAP + _SHARE_OF,
                                                                _SHARE_OF + _CLAUSE_GAP + _DATA_WORDS))
# The loader's next batch told to take seconds or a long time: "next() in the dataloader spends 10~20s", "batches
# take a very long time to load".
_LOADER_CALL = (r"(?:next\(\)|__next__|next\(\s*(?:iter\()?\w*\)?\)|\bnext batch|data ?load\w*"
                r"|(?:load|fetch|read)\w* (?:the )?(?:data|batch\w*)\b)")
_TAKES = (r"(?:spend|spent|take|took|taking|cost|last)\w*\s+(?:about |around |over |up to |~)?"
          r"(?:(?P<seconds>\d+(?:\.\d+)?)\s*(?:(?:~|-|to)\s*\d+(?:\.\d+)?\s*)?(?:s|secs?|seconds)\b"
          r"|(?:a )?(?:very |really |so )?long time)")
SLOW_NEXT = re.compile(f"{_LOADER_CALL}{_CLAUSE_GAP}{_TAKES}"
                       r"|\bbatch\w* (?:take|took|taking)\w* (?:a )?(?:very |really |so )?long time to "
                       r"(?:load|arrive|come)", re.I)
NEGATED = re.compile(r"\b(?:not|no|never|only|just|less than|under|below)\b|n't", re.I)


# The loader's row in a profile: torch.profiler's "enumerate(DataLoader)#<iterator>.__next__" (dataloader.py names
# it so; key_averages().table() cuts it at 55 characters), the iterator or DataLoader.__next__ named in a sentence,
# py-spy top's "__next__ (…/torch/utils/data/dataloader.py:N)", Lightning's SimpleProfiler's fetch of a batch.
LOADER_ROW = re.compile(r"enumerate\(DataLoader\)#|_(?:SingleProcess|MultiProcessing)DataLoaderIter"
                        r"|DataLoader\.__next__|__next__ \(\S*torch[/\\]utils[/\\]data[/\\]dataloader\.py"
                        r"|\btrain_dataloader_next\b")
# cProfile's row for the same call (dataloader.py:N(__next__)) and its total.
CPROFILE_ROW = re.compile(r"^\s*[\d/]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s+[\d.]+\s+\S*torch[/\\]utils[/\\]data[/\\]"
                          r"dataloader\.py:\d+\(__next__\)")
CPROFILE_TOTAL = re.compile(r"function calls (?:\(\d+ primitive calls\) )?in ([\d.]+) seconds")
# A share in a row: not a progress bar's "100%|".
_PERCENT = re.compile(r"(\d{1,3}(?:\.\d+)?)\s?%(?!\s*\|)")


def profiler_share(lines: list[str]) -> tuple[float, str, str] | None:
    """(share of the profiled time in the loader's __next__, the row, the iterator's kind: "_SingleProcess",
    "_MultiProcessing" or "") from the loader's row: its inclusive column (torch.profiler's "CPU total %", py-spy's
    "%Total", Lightning's "Percentage %"), else its largest share; or from a cProfile listing (cumtime over the
    total)."""
    column = _inclusive_column(lines)
    for line in lines:
        if not LOADER_ROW.search(line):
            continue
        shares = [float(s) for s in _PERCENT.findall(line)] or _lightning_share(line, column)
        if shares:
            share = shares[column] if isinstance(column, int) and len(shares) > column else max(shares)
            kind = re.search(r"_SingleProcess|_MultiProcessing", line)
            return share / 100, line.strip()[:200], kind[0] if kind else ""
    total = next((float(m[1]) for m in map(CPROFILE_TOTAL.search, lines) if m), 0.0)
    row = next((m for m in map(CPROFILE_ROW.match, lines) if m), None)
    return (float(row[1]) / total, row.string.strip()[:200], "") if row and total > 0 else None


def _inclusive_column(lines: list[str]) -> int | str | None:
    """Which of a row's shares counts the loader's call with all it calls: the place of "CPU total %" among
    torch.profiler's share columns, of "%Total" among py-spy top's; "Lightning" for its extended report."""
    for line in lines:
        if "Percentage %" in line and "Action" in line:
            return "Lightning"
        headers = [c for c in re.split(r"\s{2,}", line.strip()) if "%" in c]
        for wanted in ("CPU total %", "%Total"):
            if wanted in headers:
                return headers.index(wanted)
    return None


def _lightning_share(line: str, column) -> list[float]:
    """The last cell of a row of Lightning's extended report ("|  action\t|  mean\t|  calls\t|  total\t|  80.5\t|")."""
    cells = [c.strip() for c in line.split("|") if c.strip()]
    return [float(cells[-1])] if column == "Lightning" and cells and re.fullmatch(r"[\d.]+", cells[-1]) else []


# A utilisation figure of the GPU's (nvidia-smi's "GPU-Util", "GPU usage ~30%", "30% GPU utilisation"), not its
# memory's.
GPU_FIGURE = re.compile(r"\bGPU(?![\w -]{0,30}?mem)[\w -]{0,30}?(?:at|is|of|:|around|about|~)?\s*\(?~?"
                        r"(\d{1,3}(?:\.\d+)?)\s?%|(\d{1,3})\s?%\s+Default\b"
                        r"|(\d{1,3}(?:\.\d+)?)\s?%\s+(?:of (?:the )?)?GPU\b(?! ?mem)", re.I)
# Words about waiting for data; a GPU that is low for another reason (a small model, a sync) is not told that way.
WAITING_WORDS = re.compile(r"wait\w* (?:for|on) (?:the )?(?:data|(?:next )?batch|input|loader|IO\b|I/O)"
                           r"|data ?load\w* (?:is )?(?:the )?bottleneck|bottleneck is (?:the )?data|starv\w*"
                           r"|\bIO[- ]bound|\bslow (?:IO|I/O|disk|storage|data ?load\w*)"
                           r"|\blong time to (?:load|arrive)|\bload\w* (?:is |are )?(?:very |so |too )?slow", re.I)
# The GPU idle between steps, told beside its figure: "drops to 0", "between 0 and 100", "0% most of the time".
IDLE_BETWEEN = re.compile(r"\b(?:drop|fall|go|dip)\w*\s+(?:down\s+)?to\s+0\b|\bbetween 0\s?%? and|\b0\s?% most of "
                          r"the time|\b(?:mostly|often) (?:at )?0\s?%", re.I)
# A loop that stops, rather than waits: a stuck loader leaves the GPU idle too (01, 31 and others tell it).
HANG_WORDS = re.compile(r"\b(?:hang\w*|hung|stuck|freez\w*|frozen|deadlock\w*)\b", re.I)
_SENTENCE = re.compile(r"(?<!\d)[.!?;](?!\d)|\n")


def _gpu_told(lines: list[str]) -> tuple[str, str] | None:
    """("gpu", what was read) where a low GPU figure comes with words about waiting for data (anywhere in the text) or
    about idling between steps (beside it), or a sentence says the GPU waits or starves; None in a text about a hang."""
    text = "\n".join(lines)
    if HANG_WORDS.search(text):
        return None
    for line in lines:
        low = next((f for m in GPU_FIGURE.finditer(line) if (f := float(next(g for g in m.groups() if g))) <= 50),
                   None)
        told = "waiting for data" if WAITING_WORDS.search(text) else "idling between steps" if IDLE_BETWEEN.search(
            line) else None
        if low is not None and told:
            return "gpu", f"the GPU at {low:g} %, with words about {told}: {line.strip()[:160]}"
    for sentence in _SENTENCE.split(text):
        gpu, waits = re.search(r"\bGPUs?\b", sentence), WAITING_WORDS.search(sentence)
        # "not", "no issue" between the GPU and the words, or just after them: told, but denied.
        if gpu and waits and not GPU_FIGURE.search(sentence) and not NEGATED.search(
                sentence[min(gpu.end(), waits.start()):waits.end() + 12]):
            return "gpu", f"the text says the GPU waits for data: {sentence.strip()[:160]}"
    return None
