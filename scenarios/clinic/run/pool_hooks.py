"""The hook on a library's own thread pool (installed by observe.py, which see): tokenizers' batch entry
points (encode_batch and its kin, a trainer's run), which start its Rust thread pool.  Each process's first
call with the pool on (and with it off) is written once, with the time and what TOKENIZERS_PARALLELISM
said: a pool used in the training process before its DataLoader forked workers that tokenize too leaves
each of them on one thread, or hangs them (23).  Every failure of the hook is swallowed: it never changes
what the run does."""
from __future__ import annotations

import functools
import os
import time

ENTRY_POINTS = ("encode_batch", "encode_batch_fast", "decode_batch", "train", "train_from_iterator")
_WRITERS: list = []  # observe.py's writer of a record, given by watch (no import back)
_USED: set = set()   # (pid, on) written: a forked child inherits the set, not its own entries
# tokenizers' rule for TOKENIZERS_PARALLELISM: these turn the pool off, anything else (unset too) on
_OFF = ("", "off", "false", "f", "no", "n", "0")


def watch(writer) -> None:
    if not _WRITERS:
        _WRITERS.append(writer)


def install(module, hook, writer) -> None:
    """Each of tokenizers.Tokenizer's entry points this release has, wrapped by `hook` (observe.py's, which
    keeps what it wrapped)."""
    watch(writer)
    for name in ENTRY_POINTS:
        if hasattr(module.Tokenizer, name):
            hook(module.Tokenizer, name, pooled(getattr(module.Tokenizer, name), name))


def pooled(method, name: str):
    @functools.wraps(method)
    def call(*args, **kwargs):
        try:
            said = os.environ.get("TOKENIZERS_PARALLELISM")
            on = (said or "").strip().lower() not in _OFF[1:]   # unset: on, as tokenizers decides
            if (os.getpid(), on) not in _USED:
                _USED.add((os.getpid(), on))
                for writer in _WRITERS[:1]:
                    writer({"k": "pool", "lib": "tokenizers", "pid": os.getpid(), "ppid": os.getppid(),
                            "t": time.monotonic(), "what": name, "on": on, "configured": said})
        except Exception:
            pass
        return method(*args, **kwargs)
    return call
