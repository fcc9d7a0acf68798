"""`python -m scenarios doctor [--seconds N] [--json] -- COMMAND …`: the user's own run, watched from inside.

The command runs unchanged from the current folder (`python train.py --lr 3e-4`, `torchrun
--nproc_per_node=2 train.py`, `accelerate launch train.py`, a Lightning script, a shell script), below the
runner's reaper and with the observer (run/observe.py: a sitecustomize.py on PYTHONPATH) in every
interpreter it starts: the training processes, each rank a launcher starts, every DataLoader worker
however started.  Its output is shown as it comes (on stderr, so that --json stays clean).  At the
end of the window it gets Ctrl-C as a terminal sends it, to its whole process group, and a few
seconds to end by itself; then what is left is killed and reaped, and what it left in /dev/shm
removed.  Nothing else of the user's is touched: a checkpoint exists only if the run wrote it.

What the checks read (their `observed(run)` hook) is a dict: run/observed.py's summary (its
`per_epoch` rows: each loader's epochs per process and rank, delivered, distinct and ended), and
`seconds`, `stopped` (the window ended it), `exit_status` and `output`, the run's last lines, which
`explain` reads as it reads a pasted log: the library's own messages the run printed count too.
"""
from __future__ import annotations

import os
import shutil
import sys
import time

from scenarios.clinic.doctor.findings import Finding
from scenarios.clinic.run.shm_leaks import remove_leaked_shm, shm_names
from scenarios.clinic.run.supervise import Supervised

WINDOW_S = 60.0   # a run's first epochs: enough for most faults to show, short enough to wait for
GRACE_S = 5.0     # after Ctrl-C: a training script's own `finally:` (a checkpoint it writes on exit)
OUTPUT_LINES = 5000  # of the run's output, read as `explain` reads a pasted log
# No record for this long while the run goes on: no batch delivered in any process, none made in any
# worker.  Its processes' stacks are read then, as `doctor --pid` reads a job (once a run).
STALL_S = 10.0


def problem_with(command: list[str]) -> str:
    """Why `command` cannot be started, or ''."""
    if not command:
        return "no command after --: doctor -- python train.py"
    if shutil.which(command[0]) is None and not os.path.isfile(command[0]):
        return f"no such command: {command[0]} (run from your training folder: doctor -- python train.py)"
    return ""


def _echo(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _recorded_bytes(run: Supervised) -> int:
    try:
        return os.path.getsize(run.observed)
    except OSError:
        return 0


def watch(command: list[str], seconds: float = WINDOW_S, echo=_echo, on_stall=None) -> dict:
    """Run `command` for at most `seconds` with the observer in every interpreter; what it did.
    `on_stall(pid)`, where given, is called once if the run goes STALL_S with no record (no batch
    delivered anywhere, no worker's batch made) while it runs: what its processes wait in, read then."""
    shm_before = shm_names()
    started = time.monotonic()
    run = Supervised(list(command), on_line=echo, observe=True, cwd=os.getcwd())
    stopped, stalled, last_size, last_change = False, None, -1, time.monotonic()
    try:
        while run.exit_status() is None and time.monotonic() - started < seconds:
            run.wait_noting_processes(0.5)
            size = _recorded_bytes(run)
            if size != last_size:
                last_size, last_change = size, time.monotonic()
            script = run.script()
            if on_stall and stalled is None and script and size and time.monotonic() - last_change > STALL_S:
                stalled = _examined(on_stall, script.pid, time.monotonic() - last_change)
        stopped = run.exit_status() is None
        if stopped:
            run.interrupt(GRACE_S)
    finally:  # Ctrl-C on the doctor itself too: nothing of the user's run outlives it
        survivors = run.finish()
    leaked = remove_leaked_shm(shm_before, run.seen, run.semaphores)
    return {**(run.observations or {}), "seconds": round(time.monotonic() - started, 2), "stopped": stopped,
            "exit_status": run.exit_status(), "processes": len(run.seen), "survivors": survivors,
            "leaked_shm_files": leaked, "output": "\n".join(run.lines[-OUTPUT_LINES:]),
            "stalled": stalled or {}}


def _examined(on_stall, pid: int, quiet_s: float) -> dict:
    """What `on_stall` read of the stalled run; a process that ended meanwhile leaves it empty."""
    try:
        return {"quiet_s": round(quiet_s, 1), "findings": on_stall(pid)}
    except Exception:  # psutil's NoSuchProcess and its kin: the run moved on, nothing to say
        return {}


def summary(run: dict) -> str:
    """One line: what was watched."""
    ranks = sorted({r["rank"] for r in run.get("per_epoch", []) if r.get("rank") is not None})
    how = f"stopped after {run['seconds']:.0f} s" if run["stopped"] else \
        f"ended by itself with status {run['exit_status']} after {run['seconds']:.0f} s"
    return (f"{how}; {len(run.get('loaders', []))} DataLoader(s), {run.get('real_workers', 0)} worker(s)"
            + (f", ranks {', '.join(map(str, ranks))}" if ranks else "")
            + f", {run.get('batches', 0)} batches received")


def while_stalled(stalled: dict, named: set) -> list[Finding]:
    """What the stacks showed when the run delivered nothing for a while (watched_run.STALL_S)."""
    kept = [f for f in stalled.get("findings", []) if f.scenario not in named]
    for finding in kept:
        finding.evidence = f"after {stalled['quiet_s']:.0f} s of your run with no batch: {finding.evidence}"
    return kept


# What the run printed is a log the run itself wrote: a text explain is sure or fairly sure of names a
# failure of this run (a risk); one it can only ask about stays a question (a note).
_LEVEL_OF = {"certain": "risk", "likely": "risk", "possible": "note"}


def printed_by_the_run(output: str, measured: set, wanted: set) -> list[Finding]:
    """`explain`'s findings on the run's own output, as the doctor's.  A scenario whose check read the
    run's observation is left to that measurement, whatever the output says: a printed line never
    overrules what the run was seen to do (34's fixed.py prints its few recompiles)."""
    from scenarios.clinic.doctor.explain import explain_text

    read = explain_text(output)
    beaten = _beaten_by({f.scenario for f in read})
    found = []
    for finding in read:
        if finding.scenario in measured | beaten or finding.scenario not in wanted:
            continue
        finding.evidence = f"printed by your run: {finding.evidence}"
        finding.level = _LEVEL_OF.get(finding.level, "note")
        found.append(finding)
    return found


def _beaten_by(named: set) -> set:
    """The scenarios that a named one's check declares it wins over (WINS_OVER): explain lists a certain
    one below its winner; in a run's report the winner alone is the failure (31's rank that timed out
    beside 01's generic reading of the same line)."""
    from scenarios.clinic.doctor.checks import CHECKS

    return {loser for check in CHECKS if check.SCENARIO in named for loser in getattr(check, "WINS_OVER", ())
            if loser != "*"}
