"""A pasted log read as the program wrote it: launchers', containers' and loggers' wrapping taken off
(`unwrap`), its traceback and error paragraphs found (`blocks`).  `explain` and `printed` read through it."""
from __future__ import annotations

import re

COLOUR = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# What launchers, containers and loggers put before a program's line; taken off one after another.
PREFIXES = [
    r"\[(?:rank|Rank|RANK)\s*\d+\]:\s?", r"rank\d+:\s", r"\d+:\s(?=\S)", r"srun:\s(?!error:)",
    r"\[pod/[^\]\s]+\]\s", r"[\w.-]+-\d+\s+\|\s",                           # kubectl --prefix, docker compose
    r">(?:\s|$)", r"\[\d+,\d+\]<std(?:out|err)>:",                           # a quoted reply; mpirun --tag-output
    r"\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?(?:\s*[-|]\s*|\s+|$)",
    r"(?:[\w.]+\s+-\s+)?\[?(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\]?\s*[-|:]\s(?!Unexpected)",
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]+:", r"[EWI]\d{4}\s[\d:.]+\s+\d+\s[\w.]+:\d+\]\s",  # logging, glog
]
WRAPPING = re.compile("|".join(f"(?:{p})" for p in PREFIXES))
RANK_PREFIX = re.compile("|".join(f"(?:{p})" for p in PREFIXES[:2]))   # the marks launchers put before a rank's line
# A pasted traceback often starts at a frame, its header cut off: a `File "…", line N, in f` starts one
# too (a traceback's frame; faulthandler's "line N in f" has no comma and stays out).
# IPython's form: a "NameError    Traceback (most recent call last)" header, frames as "path in f(args)".
START = re.compile(r"^Traceback \(most recent call last\):|^\s*File \".*\", line \d+, in |"
                   r"^\S+\s+Traceback \(most recent call last\)|^\S+\.py in \S+\(|"
                   r"^(?:\S+Error|\S+Exception|Exception)\b.*:|^\S.*:\d+: \w*Warning:|"
                   r"^(?:ERROR|Error|RuntimeError)\b|DataLoader worker|huggingface/tokenizers|"
                   r"Too many dataloader workers")
CHAINED = re.compile(r"The above exception was the direct cause|During handling of the above exception")


def unwrap(text: str) -> list[str]:
    """The log's lines as the program wrote them: tqdm's redrawn bars reduced to their last
    state, launcher, container and logger prefixes and colour codes taken off."""
    lines = []
    for raw in text.replace("\r\n", "\n").split("\n"):
        line = COLOUR.sub("", raw.rstrip("\r").split("\r")[-1])
        for _ in range(4):
            shorter = WRAPPING.sub("", line, count=1) if WRAPPING.match(line) else line
            if shorter == line:
                break
            line = shorter
        lines.append(line.rstrip())
    return lines


def blocks(lines: list[str]) -> list[tuple[int, list[str]]]:
    """(first line's index, lines) of each traceback or error paragraph: from a line that starts
    one to two blank lines, or to a new traceback that is not chained to it (PyTorch chains a
    worker's death under "exited unexpectedly")."""
    found, current, first = [], None, 0
    for index, line in enumerate(lines):
        unchained = line.startswith("Traceback (most recent") and current \
            and not any(CHAINED.search(before) for before in current[-3:])
        if current is not None and (unchained or (not line.strip() and current and not current[-1].strip())):
            found.append((first, current))
            current = None
        if current is None:
            if START.search(line):
                current, first = [line], index
            continue
        current.append(line)
    if current:
        found.append((first, current))
    return found
