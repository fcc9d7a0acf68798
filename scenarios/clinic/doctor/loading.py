"""The user's file and function: imported and called as `python their_file.py` would see it,
within one time limit, with their own error shown as theirs (never our traceback)."""
from __future__ import annotations

import importlib.util
import inspect
import signal
import sys
import threading
import time
import traceback
import types
from pathlib import Path

from scenarios.clinic.doctor.findings import BadInput
from scenarios.clinic.paths import is_theirs, shown

BUILD_LIMIT_S = 120.0     # the most your function may take to return the loader, import included


def as_theirs(err: BaseException, doing: str) -> str:
    """'their/file.py, line 12, in make_loader: KeyError: 'x' (…)': the deepest frame of
    the user's own code, and their message."""
    frames = traceback.extract_tb(err.__traceback__)
    theirs = [f for f in frames if is_theirs(f.filename)]
    frame = theirs[-1] if theirs else (frames[-1] if frames else None)
    message = traceback.format_exception_only(err)[-1].strip()
    where = f"{shown(frame.filename)}, line {frame.lineno}, in {frame.name}: " if frame else ""
    return f"{where}{message} (raised {doing})"


def _import_user_file(path: Path) -> types.ModuleType:
    # Imported under its own name, with its folder first on sys.path, as `python file.py`
    # would see its neighbours; spawned workers need both to find its classes again.
    folder = str(path.parent.resolve())
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = path.stem if path.stem.isidentifier() else "doctor_target"
    existing = sys.modules.get(name)
    if existing is not None and Path(getattr(existing, "__file__", "") or "").resolve() != path.resolve():
        name = f"doctor_{path.stem}_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise BadInput(f"{shown(path)} is not a Python file that can be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    argv, sys.argv = sys.argv, [str(path)]  # a file that parses arguments at import sees only its name
    try:
        spec.loader.exec_module(module)
    except SyntaxError as err:
        sys.modules.pop(name, None)
        raise BadInput(f"{shown(err.filename or path)}, line {err.lineno}: SyntaxError: {err.msg} "
                       f"(while importing {shown(path)})") from None
    except (Exception, SystemExit) as err:
        sys.modules.pop(name, None)
        raise BadInput(as_theirs(err, f"while importing {shown(path)}")) from None
    finally:
        sys.argv = argv
    return module


class _TooSlow(BaseException):
    pass


def _call_with_limit(function, limit_s: float):
    """Call it; in the main thread, a SIGALRM ends it after limit_s (a function that waits
    on a network share or a lock must not hang the doctor)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        return function()

    def too_slow(signum, frame):
        raise _TooSlow()
    previous = signal.signal(signal.SIGALRM, too_slow)
    signal.setitimer(signal.ITIMER_REAL, limit_s)
    try:
        return function()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def load_loader(target: str, limit_s: float = BUILD_LIMIT_S):
    """Import FILE.py and call FUNCTION() from "FILE.py:FUNCTION"; return (loader, seconds).
    The import and the call share one limit: the message comes at limit_s, not later."""
    from torch.utils.data import DataLoader

    path_text, colon, name = target.rpartition(":")
    if not colon or not path_text or not name:
        raise BadInput(f"expected FILE.py:FUNCTION (e.g. train.py:make_loader), got {target!r}")
    path = Path(path_text).expanduser()
    if not path.is_file():
        raise BadInput(f"no such file: {path_text}")
    started = time.perf_counter()
    too_slow = f"{path_text}:{name}() did not return a loader within {limit_s:.0f} s"
    try:
        module = _call_with_limit(lambda: _import_user_file(path), limit_s)
    except _TooSlow:
        raise BadInput(f"importing {path_text} took more than {limit_s:.0f} s") from None
    function = _function_in(module, path_text, name)
    argv, sys.argv = sys.argv, [str(path)]
    try:
        loader = _call_with_limit(function, max(0.1, limit_s - (time.perf_counter() - started)))
    except _TooSlow:
        raise BadInput(too_slow) from None
    except (Exception, SystemExit) as err:
        raise BadInput(as_theirs(err, f"by {name}()")) from None
    finally:
        sys.argv = argv
    if not isinstance(loader, DataLoader):
        raise BadInput(f"{path_text}:{name}() returned {type(loader).__module__}.{type(loader).__qualname__}, "
                       "not a torch.utils.data.DataLoader")
    return loader, time.perf_counter() - started


def _function_in(module, path_text: str, name: str):
    function = getattr(module, name, None)
    if function is None:
        defined = [n for n, v in vars(module).items()
                   if inspect.isfunction(v) and v.__module__ == module.__name__ and not n.startswith("_")]
        raise BadInput(f"{path_text} has no function {name!r}"
                       + (f"; it defines: {', '.join(defined)}" if defined else ""))
    if not callable(function):
        raise BadInput(f"{path_text}:{name} is a {type(function).__name__}, not a function to call")
    return function
