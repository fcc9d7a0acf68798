"""What the doctor reports: findings, each naming its scenario, and the report they print as."""
from __future__ import annotations

import dataclasses
import enum
import os
import re
import sys
import tempfile
import textwrap

from scenarios.clinic import REPO_ROOT, SCENARIOS_DIR
from scenarios.clinic.doctor import events
from scenarios.clinic.paths import readable_paths
from scenarios.clinic.run.declarations import ScenarioError as BadInput  # noqa: F401  (one bad-input exception)
from scenarios.clinic.run.result import JSON_SCHEMA

MIB = 2**20


class Weight(enum.StrEnum):
    """How much a doctor's finding weighs (a loader, a run, a job); str-valued, so that JSON and
    comparisons with "risk" hold."""
    RISK = "risk"
    NOTE = "note"
    CRASHED = "crashed"   # a check raised; its report survives (as flutter's doctor)


class Confidence(enum.StrEnum):
    """How sure `explain` is, of a pasted text, that the lesson named fixes the user's problem."""
    CERTAIN = "certain"
    LIKELY = "likely"
    POSSIBLE = "possible"


LEVELS = tuple(Weight) + tuple(Confidence)


def level_of(value: str) -> Weight | Confidence:
    """The doctor's weight or explain's confidence a value names; ValueError for any other."""
    return Weight(value) if value in Weight._value2member_map_ else Confidence(value)


@dataclasses.dataclass
class Finding:
    scenario: str          # "03"
    level: Weight | Confidence  # a str is taken and checked: Finding("03", "rsk", …) is an error
    check: str             # a short name, e.g. "copy-on-read"
    evidence: str          # what was measured or read, with figures
    fix: str               # a fixes/ module or the change to make (the check module's FIXES)
    details: str = ""      # shown in the text report only (stacks of a hang)
    # True of every loader of this configuration (timeout=0, pools sized for the machine, a budget far
    # out of reach): no reason of this loader's own, so shown only with --all.
    general: bool = False
    in_place: str = ""     # what showed that its fix is applied already: then no fix line
    # The evidence's figures as data ({"held": 806, "limit": 1024}): what a script or a test reads,
    # never the sentence (JSON_SCHEMA below)
    figures: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        self.level = level_of(self.level)

    def fixed(self, shown_by: str) -> Finding:
        """This finding's fix is in place (what showed it): said so, and no fix line."""
        self.in_place = shown_by
        return self

    @property
    def readme(self) -> str:
        """The scenario's README, found now: a scenario may be written after the doctor."""
        found = sorted(SCENARIOS_DIR.glob(f"{self.scenario}_*/README.md"))
        return found[0].relative_to(REPO_ROOT).as_posix() if found else f"scenario {self.scenario} (being written)"

    def as_dict(self) -> dict:
        return {"scenario": self.scenario, "level": self.level, "check": self.check,
                "evidence": readable(self.evidence), "fix": "" if self.in_place else self.fix, "readme": self.readme,
                "figures": self.figures}


def finder(scenario: str, fixes: dict):
    """A check module's way to make its findings: the scenario and the fix text come from it."""
    def found(level: str, check: str, evidence: str, details: str = "", general: bool = False,
              figures: dict | None = None) -> Finding:
        return Finding(scenario, Weight(level), check, evidence, fixes[check], details, general, figures=figures or {})
    return found


def text_finder(scenario: str, fixes: dict, doc: str):
    """A check module's way to make what `explain` reads in a pasted text: what was read, the cause (the check's
    docstring's first line), and what decided the level (a reason where *likely*, the deciding question where
    *possible*), as explain writes its own."""
    cause = (doc or "").strip().splitlines()[0]

    def read(level: str, check: str, evidence: str, why: str) -> Finding:
        return Finding(scenario, Confidence(level), check, f"{evidence} ({cause}) [{level}: {why}]", fixes[check])
    return read


def merge_same(findings: list[Finding], probe) -> list[Finding]:
    """The default rule: the same finding read and then measured becomes one, with both pieces
    of evidence, a risk if either was."""
    merged = []
    for finding in findings:
        twin = next((f for f in merged if f.check == finding.check), None)
        if twin is None:
            merged.append(finding)
            continue
        twin.evidence += f"; in the probe: {finding.evidence.removeprefix('measured: ')}"
        twin.level = Weight.RISK if Weight.RISK in (twin.level, finding.level) else twin.level
        twin.details = twin.details or finding.details
        twin.figures = {**twin.figures, **finding.figures}
    return merged


def mb(n: float) -> str:
    if n < MIB / 10:
        return f"{n / 1024:,.0f} KB"
    return f"{n / MIB:,.0f} MB" if n >= 10 * MIB else f"{n / MIB:,.1f} MB"


def readable(text: str) -> str:
    """The paths of this machine as a reader's own would read (paths.readable_paths), and
    without the probe's temporary folder or the interpreter's installation."""
    text = re.sub(re.escape(tempfile.gettempdir()) + rf"/{events.PROBE_FOLDER_PREFIX}[^/\s]+/", "",
                  readable_paths(text))
    for prefix in {sys.base_prefix, os.path.realpath(sys.base_prefix)}:
        text = text.replace(os.path.join(prefix, "bin", ""), "")
    return text


class Findings(list):
    """What `examine()` returns: a list of Finding that prints as the doctor's report."""

    def __init__(self, findings=(), setup=None, probe_status: str = "", header: str = ""):
        super().__init__(findings)
        self.setup, self.probe_status, self.header = setup, probe_status, header
        self.seconds: float | None = None      # what the examination took
        self.probe = None                      # the ProbeResult, where a probe ran
        self.status_label = "probe"            # "job" for a running job (doctor --pid)
        self.hidden = 0                        # general notes left out (--all shows them)

    def without_general(self) -> Findings:
        """The findings with a reason of this loader's own; the general notes counted, not shown."""
        kept = [f for f in self if not (f.general and f.level == "note")]
        self.hidden += len(self) - len(kept)
        self[:] = kept
        return self

    def as_json(self, **beside) -> dict:
        """The one shape of every --json of the doctor and of explain (README's "JSON output"):
        {"schema": N, "findings": [...]} and what a command adds beside."""
        return {"schema": JSON_SCHEMA, "findings": [f.as_dict() for f in self], **beside}

    @property
    def risks(self) -> list[Finding]:
        return [f for f in self if f.level == "risk"]

    def __str__(self) -> str:
        return format_report(self)

    def _repr_pretty_(self, printer, cycle):  # IPython/Jupyter show the report
        printer.text(format_report(self))


def _wrapped(text: str, first: str, indent: str = "      ") -> list[str]:
    return textwrap.wrap(text, width=102, initial_indent=indent + first, subsequent_indent=indent + " " * len(first),
                         break_long_words=False, break_on_hyphens=False)


def format_report(findings: Findings) -> str:
    lines = [f"DataLoader doctor · {findings.header}"]
    if findings.setup:
        lines.append(f"  {findings.setup.line()}")
    if findings.probe_status:
        lines.append(f"  {findings.status_label}: {findings.probe_status}")
    for finding in findings:
        lines += ["", f"{finding.level:<4}  {finding.scenario}  {finding.check}"]
        fix = _wrapped(f"already in place ({finding.in_place})", "fixed: ") if finding.in_place else \
            _wrapped(finding.fix, "fix: ")
        lines += _wrapped(finding.evidence, "") + fix + [f"      see: {finding.readme}"]
        if finding.details and finding.check == "hang":
            lines += ["      stacks:"] + [f"        {line}" for line in finding.details.splitlines()[:40]]
    risks = len(findings.risks)
    crashed = sum(f.level == "crashed" for f in findings)
    took = f" · {findings.seconds:.1f} s" if findings.seconds is not None else ""
    hidden = f" ({findings.hidden} general note(s) not shown: --all)" if findings.hidden else ""
    lines += ["", f"{risks} risk(s), {len(findings) - risks - crashed} note(s)"
              + (f", {crashed} check(s) crashed" if crashed else "") + hidden + took]
    return readable("\n".join(lines))
