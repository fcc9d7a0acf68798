"""09 · what spawn and forkserver workers receive by pickle, and what they pay to start."""
import sys

from scenarios.clinic.doctor import events
from scenarios.clinic.doctor.findings import finder

SCENARIO = "09"
FIXES = {
    "pickle-for-workers": "fixes/spawn_safe.py (check_spawn_safe(loader) names the culprit); define functions and "
                          "classes at module level, open resources inside the worker, keep the script's work under "
                          "`if __name__ == \"__main__\":`",
    "start-method-3.14": "say multiprocessing_context='fork' if the loader needs fork, or make it picklable "
                         "(fixes/spawn_safe.py names what is not)",
    "spawn-start-up": "persistent_workers=True pays the start-up once per run instead of once per epoch",
}
# The spawned child's side too: its parent died while pickling the loader, so it reads an empty pipe;
# and the last paragraph of the bootstrapping message, which a paste may start at.
ERRORS = [(r"Can't pickle|Can't get attribute|cannot pickle|cannot be pickled|PicklingError|bootstrapping phase"
           r"|freeze_support\(\)\" line can be omitted|load\(from_parent\)\s+EOFError: Ran out of input",
           "pickle-for-workers")]
# A paste cut while the DataLoader starts a worker: its traceback runs from the iterator's w.start() into
# multiprocessing's start-up (spawn pickles the process object there) and stops at one of its frames, before the
# exception that would say what did not pickle.  Possible, with the question (ASK): 09, 11 or 01.
ERRORS += [(r"dataloader\.py\"?, line \d+, in __init__\s*\n\s*w\.start\(\)\s*\n[\s\S]*multiprocessing[/\\]"
            r"(?:process|context|popen_\w+|reduction)\.py\"?, line \d+, in \w+\s*\n[^\n]*\S[^\n]*\s*\Z",
            "pickle-for-workers")]
ASK = [(r"Popen\(|_launch\(|\.dump\(|\.start\(\)|_Popen",
        "the paste stops while the DataLoader started a worker, before the error that says what could not be "
        "pickled: a lambda or a function defined inside another is 09 (fixes/spawn_safe.py names it), an open "
        "file 11, a lock 01. Paste the lines below the last frame")]
# A start method's own frames: spawn or forkserver pickling the process object in the parent
# (reduction.dump; a Pool's task send is reduction.dumps), or unpickling it in the child (spawn's
# _main).  A pickling error there is the start method's, and 09's lesson holds whatever process the
# script started.  The child's "Ran out of input" is no pickling error but its parent's death, and
# stays unnamed alone: of 8 public threads that posted only it, 1 was a DataLoader's, 3 other
# processes', 4 unclear (tests/logs/public/BASE_RATES.md).
CONTEXT = (r"multiprocessing[/\\]reduction\.py\"?, line \d+, in dump\b"
           r"|multiprocessing[/\\]popen_(?:spawn_\w+|forkserver)\.py"
           r"|multiprocessing[/\\]spawn\.py\"?, line \d+, in _main\b(?![\s\S]*EOFError)")
# What spawn and forkserver need and a script may lack, named by the pickler or by multiprocessing
# itself: a function or class defined inside another, one defined in a notebook's __main__ the
# child cannot import, a script that starts processes outside `if __name__ == "__main__":`.
LIKELY = [(r"Can't (?:pickle|get) local object|Can't get attribute '[^'\n]+' on <module '__main__'",
           "pickle-for-workers", "the pickler cannot name a function or class defined inside another or in a "
           "notebook, which a spawned child must import; whoever started the child, it must be defined at a "
           "module's top level"),
          (r"finished its bootstrapping phase", "pickle-for-workers", "multiprocessing's own words: the script "
           "starts processes while a spawned child imports it, outside `if __name__ == \"__main__\":`")]
# torch/utils/data/dataloader.py warns so when a worker cannot start under spawn or forkserver.
LOG_TEXTS = [(r"Got pickle error when attempting to start a worker Process", "pickle-for-workers")]
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = "pickling the loader as spawn would, no chance in it: {loaders}"
_found = finder(SCENARIO, FIXES)


def _pickle_problem(loader) -> str | None:
    from fixes.spawn_safe import SpawnSafetyError, check_spawn_safe
    try:
        check_spawn_safe(loader)
    except SpawnSafetyError as err:
        return err.culprit
    except Exception as err:  # a __reduce__ of the user's that fails in its own way
        return f"{type(err).__name__}: {err}"
    return None


def static(examined):
    method, loader = examined.setup.start_method, examined.loader
    problem = _pickle_problem(loader) if examined.workers else None
    if problem and method in ("spawn", "forkserver"):
        return [_found("risk", "pickle-for-workers", f"under {method} every worker receives dataset, collate_fn and "
                       f"worker_init_fn by pickle: {problem}")]
    if problem and loader.multiprocessing_context is None and sys.version_info < (3, 14) \
            and sys.platform.startswith("linux"):
        return [_found("note", "start-method-3.14", "this loader relies on fork, the default start method before "
                       "Python 3.14; from 3.14 Linux defaults to forkserver, which pickles what workers receive: "
                       + problem)]
    return []


def measured(examined, probe):
    first, setup = probe.first(events.FIRST_BATCH), examined.setup
    if not (first and setup.start_method in ("spawn", "forkserver") and first["seconds"] > 5):
        return []
    return [_found("note", "spawn-start-up",
                   f"the first batch took {first['seconds']:.1f} s under {setup.start_method}: each worker starts a "
                   "fresh interpreter, imports torch and unpickles the dataset"
                   + ("" if setup.persistent_workers else ", again at every epoch (persistent_workers=False)"))]
