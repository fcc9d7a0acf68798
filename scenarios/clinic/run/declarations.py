"""What a scenario declares in its scenario.toml, and whether this machine can run it.

    title = "…"                # one line, shown by `list` and `make help`
    needs = ["fork"]            # platform facilities: linux, fork, userns, memory_cgroup, cuda
    limit_s = 60                # hard wall-clock limit per variant

    [variants.broken]           # also fixed, and any broken_*, fixed_*, myth_*, measure_*
    expect = "error"            # completed | error | hang | signal
    evidence = 'regex'          # must match a line of the output
    metrics = { worker_uss_growth_mb = { min = 100 } }
    # a throughput or wait: `timing = true` leaves it unjudged, and says so, where the script's
    # cpu_wait_share shows the machine kept the run off the CPU (judge.BUSY_SHARE)
    # metrics = { ratio_to_bound = { min = 0.9, timing = true } }
    limit_s = 12                # this variant's own limit, if it differs

    [[symptoms]]                # a row of the front page's "Symptom you see → scenario" table;
    seen = '''…'''              # the first is the scenario's main symptom
    cause = '''…'''             # why, in a line

A variant runs the script of its name (`broken.py` for [variants.broken]).
"""
from __future__ import annotations

import dataclasses
import multiprocessing
import re
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path

from scenarios.clinic import REPO_ROOT, SCENARIOS_DIR
from scenarios.clinic.run.result import EXPECTABLE, Outcome
from scenarios.host import user_namespaces_problem

BOUND_KEYS = {"min", "max", "timing"}


class ScenarioError(Exception):
    """Bad input: reported as one line, never a traceback."""


class CannotRunHere(ScenarioError):
    """The platform lacks what the scenario needs (fork, Linux, …); `why` is the reason alone."""

    def __init__(self, subject: str, why: str):
        super().__init__(f"{subject} cannot run here: {why}")
        self.why = why


@dataclasses.dataclass(frozen=True)
class Variant(Mapping):
    """One [variants.NAME] table, checked when it is read.  A read-only mapping of the keys the table
    set, as the runner, the judge and the grader read it."""
    expect: Outcome               # one of EXPECTABLE
    evidence: str | None = None   # a regex one output line must match
    metrics: dict = dataclasses.field(default_factory=dict)  # name -> {min, max, timing}
    limit_s: float | None = None  # this variant's own limit

    @classmethod
    def read(cls, spec: dict, where: str) -> Variant:
        if problem := _problem(spec, {field.name for field in dataclasses.fields(cls)}):
            raise ScenarioError(f"{where}: {problem}")
        return cls(Outcome(spec["expect"]), spec.get("evidence"), spec.get("metrics", {}), spec.get("limit_s"))

    def _set(self) -> dict:
        return {name: value for name, value in dataclasses.asdict(self).items()
                if value is not None and not (name == "metrics" and not value)}

    def __getitem__(self, key):
        return self._set()[key]

    def __iter__(self):
        return iter(self._set())

    def __len__(self):
        return len(self._set())


def _problem(spec: dict, keys: set) -> str | None:
    """What in a variant's table the runner cannot use, or None."""
    if unknown := spec.keys() - keys:
        return f"unknown keys {sorted(unknown)}"
    if spec.get("expect") not in set(EXPECTABLE):
        return f"expect = {spec.get('expect')!r}, not one of {', '.join(EXPECTABLE)}"
    try:
        re.compile(spec.get("evidence") or "")
    except (re.error, TypeError) as err:
        return f"evidence {spec['evidence']!r} is not a regular expression ({err})"
    for name, bounds in spec.get("metrics", {}).items():
        if not isinstance(bounds, dict) or not bounds.keys() <= BOUND_KEYS or not bounds.keys() & {"min", "max"} \
                or not all(isinstance(bounds[k], int | float) for k in bounds.keys() & {"min", "max"}):
            return f"metrics.{name} = {bounds!r}: a table of min and/or max (numbers), and timing = true or false"
    limit = spec.get("limit_s")
    return None if limit is None or (isinstance(limit, int | float) and limit > 0) else f"limit_s = {limit!r}"


@dataclasses.dataclass
class Scenario:
    number: str
    slug: str
    path: Path
    title: str
    needs: list
    limit_s: float
    variants: dict  # name -> Variant
    exercise: dict = dataclasses.field(default_factory=dict)  # the [exercise] table (workshop/rules.py)
    symptoms: list = dataclasses.field(default_factory=list)  # [[symptoms]] rows: seen, cause (tables.py)

    @property
    def declaration(self) -> Path:
        return self.path / "scenario.toml"

    def script(self, variant: str) -> Path:
        return self.path / f"{variant}.py"

    def limit_for(self, variant: str) -> float:
        return float(self.variants[variant].get("limit_s", self.limit_s))


def discover() -> dict[str, Scenario]:
    """Every `scenarios/NN_slug/` folder with a scenario.toml, by number."""
    found = {}
    for folder in sorted(SCENARIOS_DIR.glob("[0-9][0-9]_*")):
        declaration = folder / "scenario.toml"
        if not declaration.is_file():
            continue
        try:
            spec = tomllib.loads(declaration.read_text())
        except tomllib.TOMLDecodeError as err:
            raise ScenarioError(f"{declaration.relative_to(REPO_ROOT)}: {err}") from None
        number = folder.name[:2]
        found[number] = Scenario(
            number=number,
            slug=folder.name,
            path=folder,
            title=spec["title"],
            needs=spec.get("needs", []),
            limit_s=float(spec.get("limit_s", 60)),
            variants={name: Variant.read(table, f"{declaration.relative_to(REPO_ROOT)} [variants.{name}]")
                      for name, table in spec["variants"].items()},
            exercise=spec.get("exercise", {}),
            symptoms=spec.get("symptoms", []),
        )
    return found


def get_scenario(number: str) -> Scenario:
    scenarios = discover()
    if not re.fullmatch(r"\d{1,2}", str(number)):
        raise ScenarioError(f"'{number}' is not a scenario number; available: {', '.join(scenarios)}")
    key = f"{int(number):02d}"
    if key not in scenarios:
        raise ScenarioError(f"no scenario {key}; available: {', '.join(scenarios)}")
    return scenarios[key]


def missing_needs(scenario: Scenario) -> str | None:
    """Why this platform cannot run the scenario, or None if it can."""
    for need in scenario.needs:
        if need == "linux" and not sys.platform.startswith("linux"):
            return f"needs Linux (this is {sys.platform}); a Linux VM or container will do"
        if need == "fork" and "fork" not in multiprocessing.get_all_start_methods():
            return (f"needs the 'fork' start method, which {sys.platform} does not have; "
                    "run it on Linux (a VM or container is fine)")
        if need == "userns":
            problem = user_namespaces_problem()
            if problem:
                return problem
        if need == "memory_cgroup":
            from scenarios.memory_cgroup import problem as memory_cgroup_problem
            problem = memory_cgroup_problem()
            if problem:
                return problem
        if need == "cuda":
            from scenarios.host import cuda_problem
            problem = cuda_problem()
            if problem:
                return problem
    return None
