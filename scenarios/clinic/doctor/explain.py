"""`python -m scenarios explain [FILE | -] [--json]`: a log or a traceback as users paste it, and
the lesson that fixes each failure in it, with how sure it is and what in the text decided.

The texts are the checks' own (checks/__init__.py's error table, the one the probe uses; LOG_TEXTS;
LIKELY; ASK); the catalogue (catalogue.txt) says which messages only the DataLoader's path prints.
  certain   a text only the DataLoader's path prints, or a generic one (an OSError, a pickling error)
            in a DataLoader's context: its frames, "Caught … in DataLoader worker process N", a pid.
  likely    a text whose mechanism, and so its lesson, is the same whoever started the process: it
            names the mechanism (a check's LIKELY: a forked child initialising CUDA, an open file or
            a lock spawn cannot pickle, a SIGKILL), or is raised in frames where the lesson holds (CONTEXT).
  possible  a text several lessons' failures print (a check's ASK: a worker gone with no signal
            named; a worker's missing file): the finding asks the one question that decides.
Pasted alone, any other generic text names nothing: searched by the text alone, at most half the
public posts of each were a DataLoader's (tests/logs/public/BASE_RATES.md).  Printed output with no
error is read by the checks' `pasted` hooks (with printed.py's readers).  Launchers' and loggers'
wrapping is undone first.  Each failure is named once, in the order the log shows them.  Measured: tests/logs/rates.py.
Exit status: 0 nothing found, 1 something found, 2 no such file or empty input.
"""
from __future__ import annotations

import re

from scenarios.clinic.doctor import catalogue
from scenarios.clinic.doctor import checks
from scenarios.clinic.doctor.checks import error_table, guarded, log_texts, rank_texts
from scenarios.clinic.doctor.findings import Finding
from scenarios.clinic.doctor.pasted import RANK_PREFIX, blocks, unwrap

# Where a traceback shows that the DataLoader was involved: its source, its workers, its messages.
THROUGH_DATALOADER = re.compile(r"torch[/\\]utils[/\\]data[/\\]|torchdata[/\\]|DataLoader|_worker_loop"
                                r"|in DataLoader worker process|dataloader worker|[Ww]orker \(?pid")
# An exception a worker raised: torch's wrapper since 1.0, the worker loop's own frame before it.
WORKER_RAISED = re.compile(r"in DataLoader worker process|in _worker_loop\b")
# The exception's class, from the traceback's last line that names one (the worker's own, or torch's
# "KeyError: Caught KeyError in …" where the paste stops there); a traceback cut before any has none.
RAISED = re.compile(r"^\W{0,3}(?:[\w.]+\.)?(\w+(?:Error|Exception|Exit))\b|Caught (\w+) in DataLoader worker", re.M)
# What a programmer's mistake raises (an index past __len__, a missing key, a wrong type), not what
# a sample that cannot be read raises: scenario 02's advice, skipping bad samples, would hide the bug.
CODE_MISTAKE = {"IndexError", "KeyError", "TypeError", "AttributeError", "NameError", "UnboundLocalError",
                "ImportError", "ModuleNotFoundError", "NotImplementedError", "ZeroDivisionError", "AssertionError",
                "RecursionError", "SyntaxError"}


# How sure a finding is of the lesson that fixes the user's problem.
CERTAIN, LIKELY, POSSIBLE = "certain", "likely", "possible"
FIRM = (CERTAIN, LIKELY)


def _finding(check, name: str, line: str, level: str = CERTAIN, why: str = "") -> Finding:
    cause = (check.__doc__ or "").strip().splitlines()[0]
    return Finding(check.SCENARIO, level, name, f"{line} ({cause}) [{level}: {why}]", check.FIXES[name])


def _asked(finding: Finding, check, line: str) -> Finding:
    """A text that other lessons' failures print too (the check's ASK): possible, with the question."""
    question = next((q for pattern, q in getattr(check, "ASK", ()) if re.search(pattern, line)), None)
    if question and finding.level in FIRM:
        finding.level = POSSIBLE
        finding.evidence = re.sub(r" \[\w+: [^\]]*\]$", f" [{POSSIBLE}: {question}]", finding.evidence)
    return finding


def _line_of(block: list[str], match: re.Match) -> str:
    """The line a match in the joined block ends on: a text matched from a frame to its message quotes the message."""
    text, at = match.string, max(match.end() - 1, match.start())
    end = text.find("\n", at)
    return text[text.rfind("\n", 0, at) + 1:end if end >= 0 else len(text)].strip()[:300]


# A traceback's source line (`raise RuntimeError(f"DataLoader timed out after …")`) holds the message's words too.
SOURCE_LINE = re.compile(r'File "[^"]*", line \d+.*\n[^\n]*\Z')


def _search(pattern: str, joined: str) -> re.Match | None:
    """The pattern's first match on the user's message line, not on a frame's source line that holds the same words."""
    found = list(re.finditer(pattern, joined))
    return next((m for m in found if not SOURCE_LINE.search(joined, 0, m.start())), found[0] if found else None)


def _caught(block: list[str]) -> str:
    return next((line.strip() for line in block if "in DataLoader worker process" in line), block[-1].strip())[:300]


def _raised(joined: str) -> str | None:
    found = RAISED.findall(joined)
    return next((line or caught for line, caught in reversed(found)), None)


# A worker's exception that an absent path raises: one file missing is a bad sample (02), every path
# missing is a path the code builds wrong, which no lesson here fixes.
PATH_MISSING = {"FileNotFoundError", "NotADirectoryError", "IsADirectoryError"}


def _level(check, line: str, joined: str, context: re.Match | None) -> tuple[str, str] | None:
    """(level, what decided) for a text of the check's ERRORS; None where it names nothing."""
    if catalogue.dataloader_only(line):
        return CERTAIN, "a text only the DataLoader's path prints"
    if context:
        return CERTAIN, f"a generic text in a DataLoader's context ({context.group(0)!r} in the paste)"
    own = getattr(check, "CONTEXT", None)
    frame = own and re.search(own, joined)
    if frame:
        return LIKELY, f"raised in {frame.group(0)!r}, where its lesson holds whoever started the process"
    return next(((LIKELY, why) for pattern, _, why in getattr(check, "LIKELY", ()) if re.search(pattern, line)), None)


def _likely(joined: str) -> Finding | None:
    """A text whose mechanism, and so its lesson, is the same whoever started the process (the
    checks' LIKELY), where nothing shows a DataLoader."""
    for check in checks.CHECKS:   # the error table's order
        for pattern, name, why in getattr(check, "LIKELY", ()):
            match = re.search(pattern, joined)
            if match:
                return _finding(check, name, _line_of([], match), LIKELY, why)
    return None


def _worker_raised(check, name: str, block: list[str], joined: str) -> Finding | None:
    """What a worker raised that no text names: a check's FRAMES in it name their lesson, else the catch-all's."""
    raised, in_worker = _raised(joined), WORKER_RAISED.search(joined)
    framed = [(c, n, why) for c in checks.CHECKS for p, n, why in getattr(c, "FRAMES", ()) if re.search(p, joined)]
    if in_worker and framed:
        return _finding(framed[0][0], framed[0][1], _caught(block), LIKELY, framed[0][2])
    if not in_worker or raised in CODE_MISTAKE | {None}:
        return None
    if raised in PATH_MISSING:
        return _finding(check, name, _caught(block), POSSIBLE, "does every sample's path fail (a path the "
                        "dataset builds wrong: print one, fix how it is joined) or one file (02: skip what cannot "
                        "be read)?")
    return _finding(check, name, _caught(block), LIKELY, f"a {raised} a worker raised reading a sample, of no "
                    "programming mistake's class")


def _block_finding(block: list[str], catch_all: bool = True) -> Finding | None:
    """The one failure a traceback shows: the error table's first match, a generic text only where
    the DataLoader is involved, where its check's frames show the mechanism, or where the text is
    one of the checks' LIKELY ones (or, with catch_all, any exception a worker raised)."""
    joined = "\n".join(block)
    context = THROUGH_DATALOADER.search(joined)
    for pattern, check, name in error_table():
        if not pattern:   # the catch-all only for an exception a worker raised
            found = catch_all and _worker_raised(check, name, block, joined)
            if found:
                return found
            continue
        match = _search(pattern, joined)
        level = match and _level(check, _line_of(block, match), joined, context)
        if level:
            found = _asked(_finding(check, name, _line_of(block, match), *level), check, _line_of(block, match))
            return _cause_above(check, match) or found
    return _likely(joined)


def _cause_above(check, match: re.Match) -> Finding | None:
    """A consequence (the check's CONSEQUENCE) with its cause named above it in one paragraph: the cause (a text
    that names one; the catch-all's "a worker raised" names none)."""
    above = match.string[:match.string.rfind("\n", 0, match.start()) + 1].splitlines()
    consequence = getattr(check, "CONSEQUENCE", None)
    named = above and consequence and re.search(consequence, _line_of([], match))
    return _block_finding(above, False) if named else None


def _logged(line: str, lines: list[str]) -> tuple[str, str]:
    """A warning's level: certain where only the DataLoader's path prints it or the log shows a
    DataLoader, likely where its mechanism is the same whoever started the process."""
    if catalogue.dataloader_only(line):
        return CERTAIN, "a text only the DataLoader's path prints"
    context = THROUGH_DATALOADER.search("\n".join(lines))
    if context:
        return CERTAIN, f"a warning in a DataLoader's log ({context.group(0)!r} in it)"
    return LIKELY, "the warning names its mechanism, whose lesson holds whoever started the process"


def _hits(lines: list[str]) -> list[tuple[int, Finding, bool]]:
    """(line index, finding) of every failure the log shows, warnings and tracebacks alike."""
    hits, covered = [], set()
    for pattern, check, name in log_texts("\n".join(lines)):
        index, match = next(((i, m) for i, m in ((i, re.search(pattern, line)) for i, line in enumerate(lines)) if m),
                            (0, None))
        if match:   # from the warning's first word: a progress bar redrawn on the same line is no evidence
            line = match.string[match.start():].strip()[:300]
            hits.append((index, _asked(_finding(check, name, line, *_logged(match.string, lines)), check, line), True))
    for first, block in blocks(lines):
        covered.update(range(first, first + len(block)))
        found = _block_finding(block)
        hits += [(first, found, False)] if found else []
    for index, line in enumerate(lines):   # a bare message, pasted without its traceback
        if index not in covered and (catalogue.dataloader_only(line) or _likely(line)):
            found = _block_finding([line])
            hits += [(index, found, False)] if found else []
    return sorted(hits, key=lambda hit: hit[0])


def _consequence(finding: Finding, warned: bool, findings: list[Finding], fatal: bool) -> bool:
    """A check's CONSEQUENCE after any finding (a worker that exited with a code: its own error came first),
    or any finding of such a check right after a traceback's finding (a worker death PyTorch reports while the
    training process unwinds: a pin-memory thread's error, 27, once came with one on an H200)."""
    consequence = getattr(next(c for c in checks.CHECKS if c.SCENARIO == finding.scenario), "CONSEQUENCE", None)
    if consequence is None or not findings or warned:
        return False
    return bool(re.search(consequence, finding.evidence)) or fatal


def _outranked(findings: list[Finding], warnings: set[int]) -> list[Finding]:
    """Without a warning or an uncertain finding whose scenario another finding's check wins over (WINS_OVER):
    09's "Got pickle error when attempting to start a worker": what could not be pickled (a lock: 01, a file: 11)
    decides the lesson.  Two workers' tracebacks interleave, so an error line can land away from the frame that
    shows its mechanism (33's feeder) and read alone as 11's: the same failure.  A certain finding stays."""
    wins = {c.SCENARIO: set(getattr(c, "WINS_OVER", ())) - {"*"} for c in checks.CHECKS}
    # A cause is never beaten by what it caused (its EXPLAINS): 33's lost batch is why 01's timeout fired.
    caused = {c.SCENARIO: set(getattr(c, "EXPLAINS", ())) for c in checks.CHECKS}
    beaten = {lost for f in findings for lost in wins.get(f.scenario, ())
              if (f.scenario, f.check) not in caused.get(lost, set())}
    kept = [f for f in findings if not ((id(f) in warnings or f.level != CERTAIN) and f.scenario in beaten)]
    return sorted(kept, key=lambda f: f.scenario in beaten)   # a certain one stays, below the more specific


def _in_a_rank(text: str) -> list[tuple[int, Finding, bool]]:
    """A check's IN_A_RANK texts on lines that a launcher marked with a rank (before unwrap takes the mark off)."""
    raw = text.replace("\r\n", "\n").split("\n")
    return [(index, _finding(check, name, line.strip()[:300], LIKELY, why), False)
            for index, line in enumerate(raw) if RANK_PREFIX.match(line) and not (index and 'File "' in raw[index - 1])
            for pattern, check, name, why in rank_texts() if re.search(pattern, line)]


def _printed(lines: list[str], text: str) -> list[Finding]:
    """What each check's `pasted` hook reads in the log as a whole; one that raises is one crashed finding."""
    raw = text.replace("\r\n", "\n").split("\n") if text else lines
    return [finding for check in checks.CHECKS if hasattr(check, "pasted")
            for finding in guarded(check, lambda check: check.pasted(lines, raw))]


def explain_text(text: str) -> list[Finding]:
    findings, seen, lines, warnings, fatal = [], set(), unwrap(text), set(), False
    hits = sorted(_hits(lines) + _in_a_rank(text), key=lambda hit: hit[0])
    printed = [(len(lines), f, False) for f in _printed(lines, text)]
    for _, finding, warned in hits + printed:
        if _consequence(finding, warned, findings, fatal):
            continue
        twin = next((f for f in findings if (f.scenario, f.check) == (finding.scenario, finding.check)), None)
        if twin and any(finding is f for _, f, _ in printed):  # the check's reading of the whole log adds to its line's
            twin.evidence, twin.level = finding.evidence, finding.level
        elif (finding.scenario, finding.check) not in seen:
            seen.add((finding.scenario, finding.check))
            findings.append(finding)
            warnings |= {id(finding)} if warned else set()
            fatal = not warned  # the last failure named ended the run (a warning in between: it did not)
    return _outranked(findings, warnings)
