"""The doctor for your own DataLoader: from your code to the scenario that explains it.

    python -m scenarios doctor path/to/train.py:make_loader [--json] [--no-probe] [--check NAME]
    make doctor LOADER=path/to/train.py:make_loader

    from scenarios.clinic.doctor import examine      # in a notebook, on a loader object
    examine(loader)

The function is called without arguments and must return a DataLoader.  Nothing of it is
changed.  The static parts of the checks only read the loader, its dataset and this process
(threads, /dev/shm, limits); whatever runs your `__getitem__` runs in the probe: a child
process that builds the loader again (your function called once more, or the loader
unpickled) and iterates it with your configuration, under a hard limit, supervised like
every scenario script.  Each check (checks/, one module per scenario) turns what it read and
what the probe measured into findings: the scenario that explains it, a level (`risk`: will
break or waste at this configuration; `note`: worth knowing), the evidence, the fix and the
scenario's README.

Exit status (scenarios/host.py): 0 no risk, 1 risks found, 2 bad input (no such file or
function, not a DataLoader, an exception in your file), 3 cannot run here.
"""
from __future__ import annotations

import os
import pickle
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import psutil

from scenarios.clinic.doctor import events
from scenarios.clinic.doctor.checks import CHECKS, error_table, guarded, name_of
from scenarios.clinic.doctor.evidence import genuine_lines, in_process_outcome, stage_text
from scenarios.clinic.doctor.findings import BadInput, Finding, Findings, merge_same
from scenarios.clinic.doctor.holdings import walk
from scenarios.clinic.doctor.loading import load_loader
from scenarios.clinic.doctor.probe import PROBE_LIMIT_S, ProbeResult, run_probe
from scenarios.clinic.doctor.running import read_job, summary, trainers_below
from scenarios.clinic.doctor.setup import Examined, describe


def select_checks(only: list[str] | None = None) -> tuple:
    """The registered checks, or those named (by scenario number or module name)."""
    if not only:
        return CHECKS
    chosen = tuple(c for c in CHECKS if c.SCENARIO in only or name_of(c) in only)
    unknown = [n for n in only if not any(c.SCENARIO == n or name_of(c) == n for c in CHECKS)]
    if unknown:
        raise BadInput(f"no check {', '.join(unknown)}; `python -m scenarios doctor --list-checks` lists them")
    return chosen


def error_finding(examined: Examined, probe: ProbeResult) -> tuple[object, Finding] | None:
    """The first error the probe met, as the check whose error text matches it explains it; an
    error of the doctor's own making (`own`, probe_loaders.doctor_made) is the doctor's, not a finding."""
    error = next((e for e in probe.all(events.ERROR) if not e.get("own")), None)
    if not error:
        return None
    message, tb = error.get("message", ""), error.get("traceback", "")
    text = f"{error.get('type')}: {message}\n{tb}"
    check, name = next((c, n) for pattern, c, n in error_table() if re.search(pattern, text))
    headline, frame = genuine_lines(f"{error.get('type')}: {message}", tb)
    if hasattr(check, "error_detail"):
        headline += "".join(part for part in [check.error_detail(error, probe)] if part.strip(" ()") not in headline)
    evidence = f"while {stage_text(error.get('stage'), examined.workers)}: {headline}" \
        + (f" (raised at {frame})" if frame else "")
    if examined.workers and error.get("stage") == events.ITERATE:
        evidence += in_process_outcome(probe)
    return check, Finding(check.SCENARIO, "risk", name, evidence, check.FIXES[name], details=tb)


def run_checks(examined: Examined, probe: ProbeResult | None, checks=CHECKS) -> list[Finding]:
    measured = probe is not None and probe.outcome not in ("not-run", "bad-input")
    from_error = error_finding(examined, probe) if measured else None

    def of(check) -> list[Finding]:
        mine = list(check.static(examined)) if hasattr(check, "static") else []
        if measured and hasattr(check, "measured"):
            mine += check.measured(examined, probe)
        if from_error and from_error[0] is check:
            mine.append(from_error[1])
        return getattr(check, "merge", merge_same)(mine, probe)
    return ordered(explained([finding for check in checks for finding in guarded(check, of)], checks))


def explained(findings: list[Finding], checks) -> list[Finding]:
    """Without the findings a risk's check says it explains (EXPLAINS: (scenario, name) pairs): a hang
    the probe met is 01's "hang" unless 23's pool or 33's dropped batch is why the workers wait; a
    worker's error is 02's unless every worker reads through one open handle (11); in a running job, a
    rank that waits for a batch because a worker is stuck (31) is not 07's slow loading."""
    explains = {c.SCENARIO: set(getattr(c, "EXPLAINS", ())) for c in checks}
    gone = {pair for f in findings if f.level == "risk" for pair in explains.get(f.scenario, ())}
    return [f for f in findings if (f.scenario, f.check) not in gone]


def ordered(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (f.level != "risk", f.level == "crashed", f.scenario, f.check))


def probe_status(probe: ProbeResult | None, setup) -> str:
    if probe is None:
        return "not run (--no-probe): checks that need a batch (memory in flight, descriptors) were skipped"
    if probe.outcome == "not-run":
        return f"not run: {probe.why_not}"
    batches = probe.all(events.BATCH)
    done = f"{len(batches)} batch(es) with {setup.num_workers} worker(s)"
    tail = f"; {probe.survivors} process(es) survived the cleanup" if probe.survivors else ""
    if probe.outcome == "hang":
        return f"stopped after {probe.seconds:.1f} s: no progress for {probe.stall_s:.1f} s ({done}){tail}"
    if probe.outcome == "limit":
        return f"stopped at its limit after {probe.seconds:.1f} s ({done}){tail}"
    if probe.outcome == "bad-input":
        return f"could not build the loader: {probe.first('bad-input')['message']}"
    if probe.outcome == "error":
        return f"{done}, then an error ({probe.seconds:.1f} s){tail}"
    if probe.outcome == "crashed":
        return f"the probe's process died after {done} ({probe.seconds:.1f} s){tail}"
    own = next((e for e in probe.all(events.ERROR) if e.get("own")), None)
    if own:  # the doctor's own loader failed: say so, and judge nothing on it
        return (f"{done} in {probe.seconds:.1f} s; the doctor's own {own.get('stage')} loader failed "
                f"({own.get('type')}: {own.get('message', '')[:120]}): a fault of the doctor, please report it; "
                f"your loader is not judged on that stage{tail}")
    return (f"{done} in {probe.seconds:.1f} s, then compared with "
            f"{'num_workers=0' if setup.num_workers else '2 workers'}{tail}")


def _examine(loader, order: dict | None, limit_s: float, build_s: float = 0.0, header: str = "",
             checks=CHECKS, show_all: bool = False) -> Findings:
    started = time.perf_counter()
    setup = describe(loader)
    roots = [("dataset", loader.dataset)]
    roots += [(name, getattr(loader, name)) for name in ("collate_fn", "worker_init_fn")
              if getattr(loader, name, None) is not None]
    examined = Examined(loader, setup, walk(roots))
    probe = None
    if order is not None:
        if not sys.platform.startswith("linux"):
            probe = ProbeResult(outcome="not-run", why_not=f"the probe reads Linux's /proc (this is {sys.platform})")
        elif order.get("why_not"):
            probe = ProbeResult(outcome="not-run", why_not=order["why_not"])
        else:
            probe = run_probe(order, limit_s=limit_s, build_s=build_s)
    result = Findings(run_checks(examined, probe, checks), setup=setup, probe_status=probe_status(probe, setup),
                      header=header)
    if not show_all:
        result.without_general()
    result.seconds = time.perf_counter() - started + build_s
    result.probe = probe
    return result


def examine(loader, with_probe: bool = True, *, limit_s: float = PROBE_LIMIT_S, only=None,
            show_all: bool = False) -> Findings:
    """Examine a DataLoader object (in a notebook): the static checks, and the probe on a
    pickled copy of it.  Returns the findings (a list that prints as the report); `show_all`
    keeps the general notes, true of every loader of this configuration."""
    from torch.utils.data import DataLoader

    if not isinstance(loader, DataLoader):
        raise TypeError(f"examine() needs a torch.utils.data.DataLoader, got {type(loader).__qualname__}")
    order = None
    folder = None
    if with_probe:
        folder = Path(tempfile.mkdtemp(prefix=events.PROBE_FOLDER_PREFIX + "loader-"))
        pickled = folder / "loader.pickle"
        try:
            with open(pickled, "wb") as out:
                pickle.dump(loader, out, protocol=pickle.HIGHEST_PROTOCOL)
            order = {"pickled": str(pickled), **_process_context()}
        except Exception as err:
            order = {"why_not": f"the loader cannot be sent to a fresh process ({type(err).__name__}: {err}); "
                              "examine the file that builds it instead: python -m scenarios doctor FILE.py:FUNCTION"}
    try:
        return _examine(loader, order, limit_s, header=f"{type(loader.dataset).__qualname__} loader",
                        checks=select_checks(only), show_all=show_all)
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def examine_file(target: str, with_probe: bool = True, *, limit_s: float = PROBE_LIMIT_S, only=None,
                 show_all: bool = False) -> Findings:
    """Import FILE.py, call FUNCTION() and examine the loader it returns; the probe calls the
    function again in its own process.  Raises BadInput for a target that cannot be examined."""
    started = time.perf_counter()
    checks = select_checks(only)
    loader, build_s = load_loader(target)
    path_text, _, name = target.rpartition(":")
    order = {"target": f"{Path(path_text).resolve()}:{name}", **_process_context()} if with_probe else None
    findings = _examine(loader, order, limit_s, build_s=build_s, header=target, checks=checks, show_all=show_all)
    findings.seconds = time.perf_counter() - started
    if findings.probe is not None and findings.probe.outcome == "bad-input":
        raise BadInput(f"{findings.probe.first('bad-input')['message']} (when the probe called it again)")
    return findings


def examine_running(pid: int, seconds: float = 6.0, only=None) -> Findings:
    """`doctor --pid`: from any PID of the job's tree to each process that runs DataLoaders
    (running.trainers_below), each read for `seconds` (running.py) and judged by each check's
    `running` hook; the report says which PID it examined and why."""
    started = time.monotonic()
    checks = [c for c in select_checks(only) if hasattr(c, "running")]
    chosen = trainers_below(pid)
    found, statuses, headers = [], [], []
    for trainer, why in chosen:
        job = read_job(pid, seconds, trainer_pid=trainer)
        job.via_launcher = pid in {p.pid for p in _parents(trainer)}
        mine = explained([f for c in checks for f in guarded(c, lambda check, job=job: check.running(job))], checks)
        for finding in mine if len(chosen) > 1 else []:
            finding.evidence = f"process {trainer}: {finding.evidence}"
        found += mine
        headers.append(f"{job.trainer} ({why}; {job.command[:60]})")
        statuses.append(summary(job))
    findings = Findings(ordered(found), header=f"running job {pid}: examined " + "; ".join(headers))
    findings.probe_status, findings.status_label = " | ".join(statuses), "job"
    findings.seconds = time.monotonic() - started
    return findings


def examine_command(command: list[str], seconds: float, only=None, echo=None) -> Findings:
    """`doctor -- COMMAND`: the user's run watched for `seconds` (watched_run.py) and judged by each
    check's `observed` hook; the report says what ran and how it ended."""
    from scenarios.clinic.doctor.watched_run import printed_by_the_run, summary, watch, while_stalled

    started = time.monotonic()
    chosen = select_checks(only)
    checks = [c for c in chosen if hasattr(c, "observed")]
    run = watch(command, seconds, on_stall=lambda pid: list(examine_running(pid, 3.0, only=only)),
                **({"echo": echo} if echo else {}))
    found = explained([f for c in checks for f in guarded(c, lambda check: check.observed(run))], checks)
    found += while_stalled(run.get("stalled", {}), {f.scenario for f in found})
    printed = printed_by_the_run(run["output"], {c.SCENARIO for c in checks} | {f.scenario for f in found},
                                 {c.SCENARIO for c in chosen})
    # A question the text alone raises (a note) is answered where the run itself showed a risk.
    found += [f for f in printed if f.level == "risk" or not any(m.level == "risk" for m in found)]
    findings = Findings(ordered(found), header=f"your run: {' '.join(command)[:100]}")
    findings.probe_status, findings.status_label = summary(run), "run"
    findings.seconds = time.monotonic() - started
    return findings


def _parents(pid: int) -> list:
    try:
        return psutil.Process(pid).parents()
    except psutil.Error:
        return []


def _process_context() -> dict:
    """What the probe's process takes over from this one: the current folder (relative data
    paths) and sys.path (where the dataset's classes are imported from)."""
    return {"cwd": os.getcwd(), "sys_path": [p for p in sys.path if p]}


