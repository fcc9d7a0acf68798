"""`python -m scenarios explain [FILE | -] [--json]`: a log or a traceback as users paste it, and
each DataLoader failure in it, explained by the check that owns its error text.

The texts are the checks' own ERRORS (checks/__init__.py's error table, the one the probe
uses), matched per traceback: a traceback counts when it went through the DataLoader (its
frames or messages name it), so an error of the model's own (CUDA out of memory in forward)
names nothing.  Launchers' wrapping is undone first: `[rank0]:` prefixes, tqdm's carriage
returns, colour codes.  Exit status: 0 nothing found, 1 something found, 2 no such file or
empty input.
"""
from __future__ import annotations

import json
import re
import sys

from scenarios.clinic.doctor.checks import error_table, log_texts
from scenarios.clinic.doctor.findings import Finding, readable
from scenarios.host import EXIT_BAD_INPUT, EXIT_NOT_AS_EXPECTED, EXIT_OK

WRAPPING = re.compile(r"^(?:\x1b\[[0-9;]*m)*(?:\[(?:rank|Rank|RANK)\s*\d+\]:\s?|\d+:\s(?=\S)|rank\d+:\s)?")
COLOUR = re.compile(r"\x1b\[[0-9;]*m")
# Where a traceback shows that the DataLoader was involved: its source, its workers, its messages.
THROUGH_DATALOADER = re.compile(r"torch[/\\]utils[/\\]data[/\\]|DataLoader|_worker_loop|in DataLoader worker process"
                                r"|dataloader worker")
# A pasted traceback often starts at a frame, its header cut off: a `File "…", line N, in f` starts one
# too (a traceback's frame; faulthandler's "line N in f" has no comma and stays out).
START = re.compile(r"^Traceback \(most recent call last\):|^\s*File \".*\", line \d+, in |"
                   r"^(?:\S+Error|\S+Exception|Exception)\b.*:|"
                   r"^(?:ERROR|Error|RuntimeError)\b|DataLoader worker|huggingface/tokenizers|"
                   r"Too many dataloader workers")


def unwrap(text: str) -> list[str]:
    """The log's lines as the program wrote them: tqdm's redrawn bars reduced to their last
    state, launcher prefixes and colour codes taken off."""
    lines = []
    for raw in text.replace("\r\n", "\n").split("\n"):
        line = raw.split("\r")[-1] if "\r" in raw else raw
        lines.append(COLOUR.sub("", WRAPPING.sub("", line, count=1)).rstrip())
    return lines


def blocks(lines: list[str]) -> list[list[str]]:
    """Tracebacks and error paragraphs: from a line that starts one to the first blank line
    after its exception line (chained tracebacks stay together: PyTorch chains a worker's
    death under "exited unexpectedly")."""
    found, current = [], None
    for line in lines:
        if current is None:
            if START.search(line):
                current = [line]
            continue
        if not line.strip() and current and not current[-1].strip():
            found.append(current)
            current = None
            continue
        current.append(line)
    if current:
        found.append(current)
    return found


def _shown_line(block: list[str], pattern: str) -> str:
    matched = [line.strip() for line in block if pattern and re.search(pattern, line)]
    caught = [line.strip() for line in block if "in DataLoader worker process" in line]
    return (matched or caught or [line.strip() for line in block if line.strip()][-1:] or [""])[0][:300]


def _finding(check, name: str, line: str) -> Finding:
    cause = (check.__doc__ or "").strip().splitlines()[0]
    return Finding(check.SCENARIO, "risk", name, f"{line} ({cause})", check.FIXES[name])


def explain_text(text: str) -> list[Finding]:
    table, lines = error_table(), unwrap(text)
    findings, seen = [], set()
    for pattern, check, name in log_texts():
        # From the warning's first word: a progress bar redrawn on the same line is no evidence.
        match = next((m for m in (re.search(pattern, line) for line in lines) if m), None)
        if match and (check.SCENARIO, name) not in seen:
            seen.add((check.SCENARIO, name))
            findings.append(_finding(check, name, match.string[match.start():].strip()[:300]))
    for block in blocks(lines):
        joined = "\n".join(block)
        if not THROUGH_DATALOADER.search(joined):
            continue
        for pattern, check, name in table:
            if not pattern and "in DataLoader worker process" not in joined:
                continue  # the catch-all only for an exception a worker raised
            if re.search(pattern, joined):
                if (check.SCENARIO, name) not in seen:
                    seen.add((check.SCENARIO, name))
                    findings.append(_finding(check, name, _shown_line(block, pattern)))
                break
    return findings


def arguments(name: str, parser) -> None:
    parser.add_argument("file", nargs="?", default="-", help="a log or traceback; '-' or nothing: standard input")
    parser.add_argument("--json", action="store_true", help="print the findings as JSON on stdout")


def run(args) -> int:
    try:
        text = sys.stdin.read() if args.file == "-" else open(args.file, encoding="utf-8", errors="replace").read()
    except OSError as err:
        print(f"error: cannot read {args.file}: {err.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not text.strip():
        print("error: the input is empty: paste the log or the traceback, or give its file", file=sys.stderr)
        return EXIT_BAD_INPUT
    findings = explain_text(text)
    if args.json:
        print(json.dumps({"findings": [f.as_dict() for f in findings]}, indent=1))
    elif not findings:
        print("no DataLoader failure found in this text (an error of the model's own, or a healthy run)")
    for finding in ([] if args.json else findings):
        print(readable(f"\n{finding.level}  {finding.scenario}  {finding.check}\n      {finding.evidence}\n"
                       f"      fix: {finding.fix}\n      see: {finding.readme}"))
    return EXIT_NOT_AS_EXPECTED if findings else EXIT_OK
