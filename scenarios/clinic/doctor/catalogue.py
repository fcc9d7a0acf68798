"""The catalogue: every message the DataLoader path can print, read from the sources that print
it (catalogue.txt), each mapped to the scenario that explains it or marked as no DataLoader
failure, with the reason.

It holds messages, not rules: the patterns that name a scenario stay in the checks' error table
(checks/__init__.py).  The catalogue adds two facts `explain` needs: which messages only the
DataLoader's path prints (those count wherever they appear in a log; a generic one counts only
in a DataLoader's context).
`source_messages` reads the installed torch's raise and warning texts, so that
tests/test_explain.py notices a message an upgrade adds.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import pathlib
import re

DATA = pathlib.Path(__file__).with_name("catalogue.txt")
# A library's messages that one scenario alone is about sit in that scenario's folder, in DATA's format
# (its reason keys included): a new scenario adds its own file, and edits no shared one.
PARTS = "[0-9][0-9]_*/catalogue.txt"
SCOPES = ("any", "ctx")   # any: counts wherever it appears; ctx: generic, counts in a DataLoader's context only
PLACEHOLDER = re.compile(r"\{[^{}]*\}|%[-\d.]*[drsR]")


@dataclasses.dataclass(frozen=True)
class Entry:
    package: str       # the importable package whose files print it ("torch", "multiprocessing", "PIL")
    path: str          # the file (or folder, for a family) under that package's folder
    verdict: str       # "06" or a reason key of catalogue.txt ("setup", "internal", ...)
    scope: str         # "dl" or "ctx" for a scenario's message; "" for a marked one
    text: str          # the message as its source writes it, "{}" where a value goes; a prefix may stand for it
    count: int = 0     # for a family (a folder marked as a whole): how many messages it held when read
    example: str = ""  # a whole message as a log shows it, where the value decides the scenario
    read: bool = True  # False where the installed file holds no text of it (a CUDA library on a CPU wheel)

    @property
    def scenario(self) -> str:
        return self.verdict if self.verdict.isdigit() else ""

    @property
    def pattern(self) -> re.Pattern:
        parts = [re.escape(part).replace(r"\ ", r"\s+") for part in PLACEHOLDER.split(self.text)]
        return re.compile(r"[^\n]{0,200}?".join(parts))

    @property
    def sample(self) -> str:
        """The message as a log would show it."""
        return self.example or PLACEHOLDER.sub("0", self.text)


def files() -> list[pathlib.Path]:
    return [DATA, *sorted(DATA.parents[2].glob(PARTS))]


@functools.cache
def load() -> tuple[dict[str, str], tuple[Entry, ...]]:
    """(reason key: its words, entries) from catalogue.txt, then each scenario's own part."""
    reasons, entries = {}, []
    for data in files():
        package, path, read = "", "", True
        for number, line in enumerate(data.read_text(encoding="utf-8").splitlines(), 1):
            line = line.rstrip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("reason "):
                key, words = line[len("reason "):].split(":", 1)
                reasons[key.strip()] = words.strip()
            elif line.startswith("== "):
                package, path, *rest = line[3:].split()
                read = rest != ["unread"]
                if rest and read:   # "== torch utils/data/datapipes family datapipes 138"
                    entries.append(Entry(package, path, rest[1], "", "", int(rest[2])))
            else:
                where = f"{data.parent.name}/{data.name} line {number}"
                entries.append(dataclasses.replace(_entry(package, path, line, reasons, where), read=read))
    return reasons, tuple(entries)


def _entry(package: str, path: str, line: str, reasons: dict, where: str) -> Entry:
    verdict, rest = line.split(None, 1)
    scope = ""
    if verdict.isdigit():
        scope, rest = rest.split(None, 1)
    if not (verdict in reasons or (verdict.isdigit() and scope in SCOPES)):
        raise ValueError(f"{where}: {verdict!r} {scope!r} is neither a scenario with a scope "
                         f"{SCOPES} nor a reason key")
    text, _, example = rest.partition(" || ")
    return Entry(package, path, verdict, scope, text.strip(), example=example.strip())


def entries() -> tuple[Entry, ...]:
    return load()[1]


def dataloader_only(line: str) -> bool:
    """Whether this line holds a message that only the DataLoader's path prints."""
    return bool(_anywhere().search(line))


@functools.cache
def _anywhere() -> re.Pattern:
    return re.compile("|".join(f"(?:{e.pattern.pattern})" for e in entries() if e.scope == "any"))


def package_folder(package: str) -> pathlib.Path:
    return pathlib.Path(importlib.import_module(package).__file__).parent


# ---- reading a package's own raise and warning texts (for the test that notices new ones) ----

def _text(node) -> str | None:
    """A message as the source builds it, "{}" where a value goes; None where it is not spelt out."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left), _text(node.right)
        return (left or "{}") + (right or "{}") if (left or right) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return _text(node.left)
    if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "format":
        return _text(node.func.value)
    return None


def _assigned(function, name: str) -> str | None:
    """What a message variable holds, where the function spells it out (`msg = f"…"`, `msg += …`)."""
    pieces = [_text(n.value) for n in ast.walk(function) if isinstance(n, (ast.Assign, ast.AugAssign))
              and any(getattr(t, "id", "") == name for t in getattr(n, "targets", [getattr(n, "target", None)]))]
    pieces = [p for p in pieces if p]
    return "".join(pieces) or None


def _messages_of(tree) -> list[tuple[int, str, str]]:
    """(line, kind, text) of each raise with a message and each warnings.warn in a module; text
    is "<dynamic …>" where the message is built out of sight."""
    found = []
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            arg, kind = node.exc.args[0], "raise"
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "warn" \
                and node.args:
            arg, kind = node.args[0], "warn"
        else:
            continue
        text = _text(arg)
        if text is None and isinstance(arg, ast.Name):
            inner = [f for f in functions if f.lineno <= node.lineno <= f.end_lineno]
            text = inner and _assigned(min(inner, key=lambda f: f.end_lineno - f.lineno), arg.id)
        found.append((node.lineno, kind, " ".join((text or f"<dynamic {ast.unparse(arg)[:40]}>").split())))
    return sorted(found)


def source_messages(package: str, paths: list[str]) -> dict[str, list[tuple[int, str, str]]]:
    """{file under the package: its messages} for the Python files at or under each path."""
    folder, found = package_folder(package), {}
    for path in paths:
        target = folder / path
        for file in sorted(target.rglob("*.py")) if target.is_dir() else [target]:
            found[file.relative_to(folder).as_posix()] = _messages_of(ast.parse(file.read_text(encoding="utf-8")))
    return found


def covers(entry: Entry, file: str, message: str) -> bool:
    """Whether an entry stands for this message of this file (its text, or its family's folder)."""
    if entry.count:
        return file.startswith(entry.path.rstrip("/") + "/")
    return entry.path == file and " ".join(message.split()).startswith(" ".join(entry.text.split()))
