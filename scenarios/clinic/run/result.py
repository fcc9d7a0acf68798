"""A variant's result: what run_variant returns, what a results folder keeps as JSON, and what every
reader reads (the report, the judge, the grader, measured.py, the tests, the notebooks).  A TypedDict:
a plain dict on the wire and on disk, with its fields and their types written once, here."""
from __future__ import annotations

import enum
from typing import NotRequired, TypedDict


class Outcome(enum.StrEnum):
    """How a run ended (judge.classify).  A variant declares one of EXPECTABLE as its `expect`."""
    COMPLETED = "completed"
    ERROR = "error"
    HANG = "hang"            # its limit, or its own watchdog, ended it
    SIGNAL = "signal"        # a signal ended the script
    CANNOT_RUN = "cannot-run"   # the script said this machine lacks what it needs (exit 3)


EXPECTABLE = (Outcome.COMPLETED, Outcome.ERROR, Outcome.HANG, Outcome.SIGNAL)

# The version of every --json the project prints (run, doctor, explain; README's "JSON output"):
# raised when a field changes meaning or goes, left when one is added.  1: a "schema" field in each
# document, a "figures" field in each finding.  2: a variant's "breaches" are records
# ({"kind", "metric", "value", "bound"}), no longer sentences.
JSON_SCHEMA = 2


class VariantResult(TypedDict):
    outcome: Outcome              # compared with the declaration's `expect`
    exit_code: int                # the script's status; negative: the signal that ended it
    signal: str | None            # that signal's name
    seconds: float
    limit_s: float
    evidence: str                 # the output line that shows the declared pattern (else the error line)
    metrics: dict[str, float]     # the script's `metric` lines, then seconds, cpu_s and the sampled_* figures
    output: str                   # every line, cut in the middle past runner.OUTPUT_KEPT_LINES
    output_tail: str              # the last runner.OUTPUT_TAIL_LINES lines
    memory: list                  # the memory samples (sampling.py)
    stacks: str                   # where it was stuck when its limit ended it
    leaked_shm_files: list[str]   # what the clean-up removed from /dev/shm
    surviving_processes: int      # processes that outlived the SIGKILL of the script's session
    worker_processes_seen: int    # every process that ran below the script, helpers aside
    observed: NotRequired[dict]   # an attempt, or a graded fixed run: what the hook saw inside PyTorch
    breaches: list[dict]          # how it differs from its declaration: judge.Breach records, said by str(Breach.of(r))
    unjudged: list[str]           # timing bounds left unjudged: the machine kept the run off the CPU
    as_expected: bool
    reused: NotRequired[bool]     # read back from CLINIC_RESULTS_DIR, not run again
