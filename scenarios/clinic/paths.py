"""Paths as a person reads them: the one rule for "a path as the user would type it", this
machine's paths in output as a reader's own would read, and the test for "a file of the user's
own code" (not Python's, not an installed package's, not ours)."""
from __future__ import annotations

import os
import re
import sys
import sysconfig
import tempfile
from pathlib import Path

from scenarios.clinic import REPO_ROOT, SCENARIOS_DIR


def shown(path) -> str:
    """Relative to the current folder when inside it, as given otherwise."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return str(path)
    return str(path) if relative.startswith("..") else relative


# Relative to the repository, to site-packages, or to the standard library; the interpreter by
# its name alone (py-spy names it by its real path, past a virtual environment's link).
_PATH_PREFIXES = sorted({
    (str(REPO_ROOT) + os.sep, ""),
    (sysconfig.get_paths()["purelib"] + os.sep, "site-packages/"),
    (sysconfig.get_paths()["platlib"] + os.sep, "site-packages/"),
    (sysconfig.get_paths()["stdlib"] + os.sep, f"python{sys.version_info[0]}.{sys.version_info[1]}/"),
    (str(Path(sys.executable).parent) + os.sep, ""),
    (os.path.dirname(os.path.realpath(sys.executable)) + os.sep, ""),
}, key=lambda pair: -len(pair[0]))

# A script's temporary folder (tempfile.mkdtemp/TemporaryDirectory) differs on every run; it lies
# in the run's own folder (run/supervise.py's Supervised) or, for a process started otherwise, in
# the system's.
RUN_FOLDER_PREFIX = "clinic-run-"
_TEMP_FOLDER = re.compile(re.escape(tempfile.gettempdir()) + rf"/(?:{RUN_FOLDER_PREFIX}\w+(?:/tmp\w+)?|tmp\w+)")


def readable_paths(text: str) -> str:
    """The paths of this machine in `text`, as a reader's own would read."""
    for prefix, replacement in _PATH_PREFIXES:
        text = text.replace(prefix, replacement)
    return _TEMP_FOLDER.sub("<tmp>", text)


_NOT_THEIRS = tuple(str(Path(p).resolve()) for p in {
    sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
    SCENARIOS_DIR, sys.prefix, sys.base_prefix})


def is_theirs(filename: str) -> bool:
    """A frame of the user's code: not Python's, not an installed package's, not the clinic's.
    Also for paths as readable_paths shows them."""
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}/"
    if filename.startswith(("<", "site-packages/", version, "scenarios/")):
        return False
    path = Path(filename) if os.path.isabs(filename) else REPO_ROOT / filename
    return not str(path.resolve()).startswith(_NOT_THEIRS)
