"""The probe's parent side: start the child (probe_child.py) under the runner's supervision,
read its events, stop it on a stall or at its limit, and reap everything it started."""
from __future__ import annotations

import dataclasses
import enum
import json
import shutil
import tempfile
import time
from pathlib import Path

from scenarios.clinic.doctor import events
from scenarios.clinic.doctor.loading import BUILD_LIMIT_S

PROBE_LIMIT_S = 15.0      # the probe's measuring time, and the most a hanging loader costs


class Outcome(enum.StrEnum):
    """How the probe ended; str-valued, so that JSON and comparisons with "hang" hold."""
    COMPLETED = "completed"
    HANG = "hang"            # stalled: no event for longer than its stage allows
    LIMIT = "limit"          # still going at its time limit
    CRASHED = "crashed"      # ended before saying it was done, with no error of theirs
    ERROR = "error"          # the user's code raised
    BAD_INPUT = "bad-input"
    NOT_RUN = "not-run"      # why_not says why


@dataclasses.dataclass
class ProbeResult:
    events: list = dataclasses.field(default_factory=list)
    output: list = dataclasses.field(default_factory=list)   # every other line (their prints, tracebacks)
    outcome: Outcome = Outcome.COMPLETED   # a str is taken and checked
    stage: str = ""
    stall_s: float = 0.0
    longest_gap_s: float = 0.0   # the longest wait between two events once loaded; a stall is one over
    stall_limit_s: float = 0.0   # this (recorded for tests/loaders/false_alarms.py's margins)
    stacks: str = ""
    seconds: float = 0.0
    exit_status: int | None = None
    survivors: int = 0
    leaked_shm: list = dataclasses.field(default_factory=list)
    why_not: str = ""

    def __post_init__(self):
        self.outcome = Outcome(self.outcome)

    def first(self, name: str) -> dict | None:
        return next((e for e in self.events if e["event"] == events.known(name)), None)

    def all(self, name: str) -> list[dict]:
        return [e for e in self.events if e["event"] == events.known(name)]


def _event(line: str, result: ProbeResult) -> dict | None:
    """Parse one line of the probe's output: an event, or output kept as evidence."""
    # Not only at the start: a worker dying of SIGSEGV leaves PyTorch's message and a NUL
    # byte in front of the next line.
    at = line.find(events.PREFIX)
    if at >= 0:
        try:
            event = events.checked(json.loads(line[at + len(events.PREFIX):]))
        except json.JSONDecodeError:  # a line the child could not finish (killed while it printed)
            event = None
        if event:
            result.events.append(event)
            # Here, not in the watch: a probe that dies within one poll (a segfault in the
            # compare stage) has its last stage read only after it is gone.
            if event["event"] == events.STAGE:
                result.stage = event["stage"]
            if line[:at].strip(" \0"):
                result.output.append(line[:at])
            return event
    result.output.append(line)
    return None


class _Watch:
    """Reads the probe's events as they come and says when to stop it: a build that takes too
    long, a stage that makes no progress, or the probe's own limit."""

    def __init__(self, result: ProbeResult, limit_s: float, build_s: float):
        self.result, self.limit_s, self.read = result, limit_s, 0
        self.started = self.last_event = time.monotonic()
        self.loaded_at = None
        self.stall_s = result.stall_limit_s = max(3.0, limit_s / 2)
        # The probe builds the loader again: about as long as the first build took, and never
        # longer than the build limit its child enforces itself (plus the child's start).
        self.build_allowance = min(2 * build_s + 20.0, BUILD_LIMIT_S + 10.0)

    def reason_to_stop(self, lines: list[str]) -> str | None:
        result = self.result
        while self.read < len(lines):
            event = _event(lines[self.read], result)
            self.read += 1
            if event:
                now = time.monotonic()
                if self.loaded_at is not None and result.stage:
                    result.longest_gap_s = max(result.longest_gap_s, now - self.last_event)
                self.last_event = now
                if event["event"] == events.LOADED:
                    self.loaded_at = self.last_event
        now = time.monotonic()
        if self.loaded_at is None and now - self.started > self.build_allowance:
            result.stall_s, result.stage = now - self.started, "build"
            return "hang"
        if self.loaded_at is not None and result.stage and now - self.last_event > self.stall_s:
            result.stall_s = now - self.last_event
            return "hang"
        if self.loaded_at is not None and now - self.loaded_at > self.limit_s:
            return "limit"
        return None


def run_probe(order: dict, limit_s: float = PROBE_LIMIT_S, build_s: float = 0.0) -> ProbeResult:
    """Start the probe's child program under supervision, watch it, and stop it for good."""
    from scenarios.clinic.run.shm_leaks import remove_leaked_shm, shm_names
    from scenarios.clinic.run.supervise import Supervised

    result = ProbeResult()
    folder = Path(tempfile.mkdtemp(prefix=events.PROBE_FOLDER_PREFIX))
    (folder / "order.json").write_text(json.dumps(dict(order, budget_s=max(2.0, limit_s - 4.0))))
    launcher = folder / "clinic_probe.py"
    # A file of its own, so that spawned workers re-import a tiny main module (they import
    # the parent's __main__ as __mp_main__), and so the child finds its order next to it.
    launcher.write_text("from scenarios.clinic.doctor.probe_child import main\n\n"
                        "if __name__ == \"__main__\":\n    main(__file__)\n")
    shm_before = shm_names()
    watch = _Watch(result, limit_s, build_s)
    run = Supervised(launcher)
    try:
        while run.exit_status() is None:
            stop = watch.reason_to_stop(run.lines)
            if stop:
                result.outcome, result.stacks = Outcome(stop), run.where_stuck()
                break
            time.sleep(0.05)
    finally:  # also on Ctrl-C: nothing the probe started outlives it
        result.survivors = run.finish()
        result.seconds = time.monotonic() - watch.started
        shutil.rmtree(folder, ignore_errors=True)
    for line in run.lines[watch.read:]:  # lines that arrived while it was stopped
        _event(line, result)
    result.exit_status = run.exit_status()
    result.leaked_shm = remove_leaked_shm(shm_before, run.seen, run.semaphores)
    if result.outcome is Outcome.COMPLETED:
        theirs = any(not e.get("own") for e in result.all(events.ERROR))  # the doctor's own are no error of theirs
        result.outcome = Outcome.BAD_INPUT if result.first(events.BAD_INPUT) else Outcome.ERROR if theirs \
            else Outcome.COMPLETED if result.first(events.DONE) else Outcome.CRASHED
    return result
