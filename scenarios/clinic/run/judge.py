"""Judging a run: what happened (the outcome), the line to read, and how it differs from the declaration."""
from __future__ import annotations

import dataclasses
import enum
import re

from scenarios.clinic.run.result import Outcome
from scenarios.host import EXIT_CANNOT_RUN
from scenarios.instruments import BUSY_SHARE

# VALUE: any way Python prints a number (3, -0.0, .5, 5., 1.5e-08, 2.00e+00, 1E5, inf, -inf,
# nan) and the digit groups Python reads back (1_000).
_DIGITS = r"\d+(?:_\d+)*"
_NUMBER = rf"[-+]?(?:(?:{_DIGITS})?\.?{_DIGITS}(?:[eE][-+]?{_DIGITS})?|{_DIGITS}\.|inf|infinity|nan)"
METRIC_LINE = re.compile(rf"^metric (\w+)=({_NUMBER})\s*$", re.IGNORECASE)
# faulthandler.dump_traceback_later() prints this when a script's own watchdog fires.
WATCHDOG_LINE = re.compile(r"^Timeout \(\d+:\d\d:\d\d\)!")
ERROR_LINE = re.compile(r"^(\w+\.)*\w*(Error|Exception|Interrupt|Exit)\b.*")


def classify(exit_status: int, timed_out: bool, lines: list[str]) -> Outcome:
    if timed_out or any(WATCHDOG_LINE.match(line) for line in lines):
        return Outcome.HANG
    if exit_status == 0:
        return Outcome.COMPLETED
    if exit_status == EXIT_CANNOT_RUN:
        return Outcome.CANNOT_RUN
    if exit_status < 0:
        return Outcome.SIGNAL
    return Outcome.ERROR


def script_metrics(lines: list[str]) -> dict:
    """The figures a script reports as `metric NAME=VALUE` lines."""
    return {m.group(1): float(m.group(2)) for m in map(METRIC_LINE.match, lines) if m}


def evidence(outcome: str, pattern: str | None, lines: list[str], timed_out: bool) -> str:
    """The one line a person should read: the declared evidence, else the error line."""
    if pattern:
        for line in lines:
            if re.search(pattern, line):
                return line.strip()
    if timed_out:
        return f"no progress before the time limit; last output: {lines[-1].strip() if lines else '(none)'}"
    if outcome in ("error", "cannot-run"):
        errors = [line for line in lines if ERROR_LINE.match(line.strip())]
        if errors:
            return errors[-1].strip()
        if outcome == "cannot-run":
            said = [line for line in lines if line.startswith("cannot run here:")]
            if said:
                return said[-1].strip()
    return lines[-1].strip() if lines else ""


# A bound declared `timing = true` is judged only when the run's processes waited for a CPU at
# most BUSY_SHARE of the time (the script's `cpu_wait_share`, scenarios/instruments.CpuWait).


def _busy(result: dict) -> float | None:
    """The run's cpu_wait_share where it was too high for a timing to mean anything."""
    share = result["metrics"].get("cpu_wait_share")
    return share if share is not None and share > BUSY_SHARE else None


def unjudged(spec: dict, result: dict) -> list[str]:
    """The timing bounds this run cannot speak to, each with why: the machine kept the run's
    processes off the CPU, so the figure measures the machine, not the code."""
    share = _busy(result)
    if share is None:
        return []
    return [f"{name}: a timing bound, not judged: the run's processes waited for a CPU {share:.0%} of the time "
            f"(judged up to {BUSY_SHARE:.0%})"
            for name, bounds in spec.get("metrics", {}).items() if bounds.get("timing")]


class Differs(enum.StrEnum):
    """How a run differs from its declaration."""
    OUTCOME = "outcome"      # value: the run's outcome; bound: the declared one
    EVIDENCE = "evidence"    # bound: the declared evidence pattern, which no output line matched
    UNTIMED = "untimed"      # a timing bound, and the run's cpu_wait_share was not measured
    UNMEASURED = "unmeasured"
    NAN = "nan"              # value: nan, which meets no bound
    BELOW = "below"          # value < bound (the declared min)
    ABOVE = "above"          # value > bound (the declared max)


@dataclasses.dataclass(frozen=True)
class Breach:
    """One way a run differs from what its declaration says it must show: read by field (the
    grader); str() is the runner's own sentence for it (reports, the result's JSON)."""
    kind: Differs
    metric: str = ""                 # the metric's name; "" for the outcome and the evidence
    value: float | str | None = None
    bound: float | str | None = None

    def record(self) -> dict:
        """The breach as data: what the result's JSON and a stored run keep."""
        return {"kind": str(self.kind), "metric": self.metric, "value": self.value, "bound": self.bound}

    @classmethod
    def of(cls, record: dict) -> Breach:
        return cls(Differs(record["kind"]), record.get("metric", ""), record.get("value"), record.get("bound"))

    def __str__(self) -> str:
        return {Differs.OUTCOME: lambda: f"outcome {self.value}, declared {self.bound}",
                Differs.EVIDENCE: lambda: f"output lacks /{self.bound}/",
                Differs.UNTIMED: lambda: f"{self.metric} is a timing bound, and cpu_wait_share was not measured",
                Differs.UNMEASURED: lambda: f"{self.metric} was not measured",
                Differs.NAN: lambda: f"{self.metric}=nan, not a figure",
                Differs.BELOW: lambda: f"{self.metric}={self.value:g} < {self.bound:g}",
                Differs.ABOVE: lambda: f"{self.metric}={self.value:g} > {self.bound:g}"}[self.kind]()


def breaches(spec: dict, result: dict) -> list[Breach]:
    """Every way the run differs from what the declaration says it must show."""
    found = []
    busy = _busy(result) is not None
    if result["outcome"] != spec["expect"]:
        found.append(Breach(Differs.OUTCOME, value=result["outcome"], bound=spec["expect"]))
    pattern = spec.get("evidence")
    if pattern and not re.search(pattern, result["evidence"]):
        found.append(Breach(Differs.EVIDENCE, bound=pattern))
    for name, bounds in spec.get("metrics", {}).items():
        if busy and bounds.get("timing"):
            continue  # unjudged() says why
        found += _metric_breach(name, bounds, result["metrics"])
    return found


def _metric_breach(name: str, bounds: dict, metrics: dict) -> list[Breach]:
    value = metrics.get(name)
    if bounds.get("timing") and "cpu_wait_share" not in metrics:
        return [Breach(Differs.UNTIMED, name)]
    if value is None:
        return [Breach(Differs.UNMEASURED, name)]
    if value != value:
        return [Breach(Differs.NAN, name, value)]
    if "min" in bounds and value < bounds["min"]:
        return [Breach(Differs.BELOW, name, value, bounds["min"])]
    if "max" in bounds and value > bounds["max"]:
        return [Breach(Differs.ABOVE, name, value, bounds["max"])]
    return []
