"""The one writer of generated blocks: the text between `<!-- NAME:begin -->` and `<!-- NAME:end -->`
in a Markdown file, replaced whole.  Every Markdown figure and table that a program writes goes through
here: each scenario's Measured block (run/report.py), the Benchmarks block (bench/report.py), and the
front page's and WORKSHOP.md's tables (tables.py)."""
from __future__ import annotations

import re
from pathlib import Path

from scenarios.clinic.run.declarations import ScenarioError


def markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


def block(name: str, body: str) -> str:
    """The block as it stands in the file, markers included."""
    begin, end = markers(name)
    return f"{begin}\n{body}\n{end}"


def _pattern(name: str) -> re.Pattern:
    begin, end = markers(name)
    return re.compile(re.escape(begin) + r"\n?(.*?)\n?" + re.escape(end), re.S)


def read_block(path: Path, name: str) -> str | None:
    """The body of the file's block, or None where the file or its block is missing."""
    found = _pattern(name).search(path.read_text()) if path.is_file() else None
    return found.group(1) if found else None


def replace_block(path: Path, name: str, body: str) -> None:
    """Replace the body of the file's one block called `name`; a file without it is an error, since
    a block written elsewhere in the file would be one a reader never finds."""
    text = path.read_text()
    pattern = _pattern(name)
    if len(pattern.findall(text)) != 1:
        begin, end = markers(name)
        raise ScenarioError(f"{path.name} needs exactly one '{begin}' … '{end}' block to fill")
    path.write_text(pattern.sub(lambda _: block(name, body), text, count=1))
