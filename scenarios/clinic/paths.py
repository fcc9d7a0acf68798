"""Paths as a person reads them: the one rule for "a path as the user would type it", and the
test for "a file of the user's own code" (not Python's, not an installed package's, not ours)."""
from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

from scenarios.clinic import REPO_ROOT, SCENARIOS_DIR


def shown(path) -> str:
    """Relative to the current folder when inside it, as given otherwise."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return str(path)
    return str(path) if relative.startswith("..") else relative


_NOT_THEIRS = tuple(str(Path(p).resolve()) for p in {
    sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
    SCENARIOS_DIR, sys.prefix, sys.base_prefix})


def is_theirs(filename: str) -> bool:
    """A frame of the user's code: not Python's, not an installed package's, not the clinic's.
    Also for paths as the probe's output shows them (run/supervise.py's readable_paths)."""
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}/"
    if filename.startswith(("<", "site-packages/", version, "scenarios/")):
        return False
    path = Path(filename) if os.path.isabs(filename) else REPO_ROOT / filename
    return not str(path.resolve()).startswith(_NOT_THEIRS)
