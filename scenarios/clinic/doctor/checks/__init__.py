"""The doctor's checks: one module per scenario, `sNN_slug.py` in this folder, found by its name
(a new scenario adds its file here and edits nothing else).

A check module owns everything about its scenario's diagnosis, through the names of CONTRACT and
no others (its helpers are private, `_name`; test_layout fails a public name outside it, so a
misspelt hook is an error, not a check that never runs).  What a check needs is handed to it or
read through the doctor's small shared readers (findings, evidence, holdings, setup, job, stacks, printed,
waits, events), the lab kit and fixes/; it imports no other check and no part of the engine that runs it
(engine, probe, running, commands, explain, orphans, machine, loading).

Importing this package loads no check: `CHECKS` imports them all the first time it is asked for.
The engine (doctor/engine.py) runs them; a check that raises becomes one `crashed` finding
naming it, and the rest of the report survives.
"""
import ast
import functools
import heapq
import importlib
import inspect
import pkgutil
import re
import traceback
from pathlib import Path

# name: (kind, what it is).  A hook's parameters are named as here.
CONTRACT = {
    "SCENARIO": ("data", '"03": the scenario that explains what it finds'),
    "FIXES": ("data", '{"copy-on-read": "…"}: the fix text of each finding it makes'),
    "ERRORS": ("data", "[(regex, finding name)]: error texts that point to it (the error table; optional)"),
    "LOG_TEXTS": ("data", "[(regex, finding name)]: warnings that name it in a log on their own (explain; optional)"),
    "CONTEXT": ("data", "regex: frames where its generic ERRORS count without a DataLoader, because its lesson holds "
                        "whoever started the process (explain; optional)"),
    "WINS_OVER": ("data", '("06",): the scenarios whose ERRORS a text matching its own ERRORS must not reach; "*": '
                          "every check that does not say \"*\" itself (the error table's order; optional)"),
    "EXPLAINS": ("data", '[("01", "hang")]: the (scenario, finding name) pairs its risk, where it makes one, is the '
                         "cause of: the doctor leaves those out beside it (engine.explained; optional)"),
    "LIKELY": ("data", "[(regex, finding name, why)]: texts whose mechanism, and so its lesson, is the same whoever "
                       "started the process: explain names them at *likely* wherever they appear (optional)"),
    "UNLESS": ("data", "regex: where a log holds it, its LOG_TEXTS name nothing there: the log says their cause is "
                       "another (explain; optional)"),
    "IN_A_RANK": ("data", "[(regex, finding name, why)]: texts that, printed by one rank of a multi-rank job (a "
                          "launcher's [rankN]: before them), are its lesson: explain names them *likely* (optional)"),
    "ASK": ("data", "[(regex, question)]: texts of its ERRORS that other lessons' failures print too: explain names "
                    "them at *possible*, with the question that decides (optional)"),
    "CONSEQUENCE": ("data", "regex: texts of its ERRORS that are what another failure named above them led to (a "
                            "worker that exited with a code: its own error came first): explain keeps that cause and "
                            "names nothing for them; after a traceback's failure, any of its findings is one "
                            "(optional)"),
    "FRAMES": ("data", "[(regex, finding name, why)]: frames that, in a traceback a DataLoader worker raised, name its "
                       "lesson whatever the exception's words, where no check's text does: explain names them "
                       "*likely* (optional)"),
    "NEEDS": ("data", "regex: its LOG_TEXTS name something only where the log holds it too: the text that shows its "
                      "mechanism, where their words alone do not (explain; optional)"),
    "HEALTHY": ("data", "how often healthy loaders and jobs trip its rules, or why no chance is in a rule: a text "
                        "whose {fields} name figures healthy.py renders from the recorded runs of "
                        "tests/loaders/false_alarms.py and tests/jobs/false_alarms.py (scenarios/HEALTHY.md)"),
    "static": ("hook(examined)", "[Finding]: what the loader, its dataset and this process show"),
    "measured": ("hook(examined, probe)", "[Finding]: what the probe's events show"),
    "running": ("hook(job)", "[Finding]: what a job running now shows (doctor --pid; a job.Job)"),
    "observed": ("hook(run)", "[Finding]: what the user's own run did, seen by the observer in its every process "
                              "(doctor -- COMMAND; a dict: run/observed.py's summary, its per_epoch rows, seconds, "
                              "stopped)"),
    "pasted": ("hook(lines, raw)", "[Finding]: what a pasted log shows as a whole, beyond any one error text: values "
                                   "a program printed, a launcher's summary; *likely* or *possible* at most, with the "
                                   "question that decides (explain; lines unwrapped, raw as pasted; optional)"),
    "merge": ("hook(findings, probe)", "[Finding]: its own rule for joining the read and the measured "
                                       "(default: findings.merge_same)"),
    "error_detail": ("hook(error, probe)", "str: words added to the headline of an error its ERRORS matched"),
}
# The module docstring's first line is the cause `explain` quotes beside a matched text.
REQUIRED = ("SCENARIO", "FIXES", "HEALTHY")


def contract_problems(check) -> list[str]:
    """What in a check module breaks the contract: a public name it defines outside CONTRACT, a
    hook whose parameters differ, a required name missing, no docstring."""
    problems = [f"no {name}" for name in REQUIRED if not hasattr(check, name)]
    problems += [] if (check.__doc__ or "").strip() else ["no docstring (explain quotes its first line)"]
    for name in _defined_names(check):
        kind = CONTRACT.get(name, (None,))[0]
        if name.startswith("_"):
            continue
        if kind is None:
            problems.append(f"public name {name!r} is not in the contract (a misspelt hook, or a helper "
                            "that should be private: _name)")
        elif kind.startswith("hook"):
            wanted = kind[5:-1].split(", ")
            if list(inspect.signature(getattr(check, name)).parameters) != wanted:
                problems.append(f"{name}{inspect.signature(getattr(check, name))} should take ({', '.join(wanted)})")
    return problems


def _defined_names(check) -> list[str]:
    """The names the module's own top level binds (not those it imports)."""
    names = []
    for node in ast.parse(inspect.getsource(check)).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [t.id for t in targets if isinstance(t, ast.Name)]
    return names


MODULE_NAME = re.compile(r"s(\d\d)_\w+")   # s03_list_refcount_growth: the scenario folder's name after an `s`
ALL = "*"


def __getattr__(name: str):
    if name == "CHECKS":
        return _checks()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _checks() -> tuple:
    """Every sNN_*.py of this folder, imported, in the error table's order."""
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if MODULE_NAME.fullmatch(m.name))
    return ordered([importlib.import_module(f"{__name__}.{name}") for name in names])


def ordered(checks: list) -> tuple:
    """The checks in the error table's order: the first pattern that matches a traceback wins, so a
    check comes before every check it declares in WINS_OVER ("Bus error" and "killed by signal:
    Killed" before 06's "killed by signal"); the GPU checks say "*": a worker's CUDA error is
    theirs, whatever else the traceback says.  The check holding the catch-all pattern ("") comes
    last.  Ties go by scenario number.  Reports sort findings by level and scenario, not by this."""
    after = {c.SCENARIO: set() for c in checks}   # scenario: the scenarios that must come after it
    for check in checks:
        wins = getattr(check, "WINS_OVER", ())
        unknown = set(wins) - set(after) - {ALL}
        if unknown:
            raise ValueError(f"{name_of(check)}: WINS_OVER names no check: {sorted(unknown)}")
        for other in checks:
            loses = other.SCENARIO in wins or (ALL in wins and ALL not in getattr(other, "WINS_OVER", ()))
            last = any(p == "" for p, _ in getattr(other, "ERRORS", ()))
            if other is not check and (loses or last):
                after[check.SCENARIO].add(other.SCENARIO)
    rank = _rank(after)
    return tuple(sorted(checks, key=lambda c: rank[c.SCENARIO]))


def _rank(after: dict[str, set[str]]) -> dict[str, int]:
    """Each scenario's place in a topological order of `after`, the lowest number first among equals."""
    before = {s: sum(s in later for later in after.values()) for s in after}
    ready, rank = [s for s, n in before.items() if n == 0], {}
    heapq.heapify(ready)
    while ready:
        scenario = heapq.heappop(ready)
        rank[scenario] = len(rank)
        for later in after[scenario]:
            before[later] -= 1
            if before[later] == 0:
                heapq.heappush(ready, later)
    if len(rank) < len(after):
        raise ValueError(f"WINS_OVER declarations go round in a circle among {sorted(set(after) - set(rank))}")
    return rank


def name_of(check) -> str:
    """`03_list_refcount_growth`: the module's name without its `s`, as the scenario folder is named."""
    return check.__name__.rsplit(".", 1)[-1][1:]


def log_texts(log: str = "") -> list[tuple[str, object, str]]:
    """(pattern, check module, finding name): warnings that name a failure on their own, without
    a traceback through the DataLoader (`explain` matches them anywhere in a log), but for the checks
    whose UNLESS this log holds or whose NEEDS it lacks."""
    return [(pattern, check, name) for check in _checks() for pattern, name in getattr(check, "LOG_TEXTS", ())
            if not (log and hasattr(check, "UNLESS") and re.search(check.UNLESS, log))
            and not (log and hasattr(check, "NEEDS") and not re.search(check.NEEDS, log))]


def rank_texts() -> list[tuple[str, object, str, str]]:
    """(pattern, check module, finding name, why): texts a check names where one rank of a job printed them."""
    return [(pattern, check, name, why)
            for check in _checks() for pattern, name, why in getattr(check, "IN_A_RANK", ())]


def error_table() -> list[tuple[str, object, str]]:
    """(pattern, check module, finding name) from every check, in `ordered`'s order: the first
    match wins, and scenario 02's catch-all comes last."""
    return [(pattern, check, name) for check in _checks() for pattern, name in getattr(check, "ERRORS", ())]


def guarded(check, part) -> list:
    """One check's findings; a check that raises becomes one `crashed` finding that names it,
    and the report survives (as flutter's doctor turns a throwing validator into a result)."""
    try:
        return list(part(check))
    except Exception as err:
        from scenarios.clinic.doctor.findings import Finding  # a face loads nothing until asked (test_layout)
        where = traceback.extract_tb(err.__traceback__)[-1]
        return [Finding(check.SCENARIO, "crashed", name_of(check),
                        f"this check raised {type(err).__name__}: {err} "
                        f"(at {Path(where.filename).name}:{where.lineno}); "
                        "the other checks ran. Please report it with this line",
                        "nothing to change in your code for this line")]
