"""How often a healthy loader or job trips the doctor's rules, from the records the two measuring
scripts keep: tests/loaders/false_alarms.py (every well-built public loader examined, probe included,
on a quiet machine and with one core kept busy) and tests/jobs/false_alarms.py (healthy training jobs
examined as `doctor --pid` examines them).  A check's HEALTHY names these figures as fields, which
`text` fills from the records, so no figure of them is typed by hand:

    {loaders}   risks and notes of the check's scenario in the loaders' runs
    {jobs}      its findings in the jobs' examinations
    {hang}      01's hang: the probe's longest wait between events against its stall limit
    {growth}    03's measured growth against the nearer of its two bounds
    {draws}     12's agreeing random draws against "all of them"
    {repeats}   13's samples two workers both delivered against its bound

`tables` renders every check's text into scenarios/HEALTHY.md, and the front page's summary.
"""
from __future__ import annotations

import functools
import json
import statistics
import textwrap
from pathlib import Path

from scenarios.clinic.doctor import checks
from scenarios.clinic.doctor.events import DRAW_PAIRS
from scenarios.clinic.measured import Machine, stamp

RECORDS = Path(__file__).resolve().parent / "measured"
LOADERS, JOBS = RECORDS / "healthy_loaders.jsonl", RECORDS / "healthy_jobs.jsonl"
# The margins tests/loaders/false_alarms.py records, each a figure's share of the threshold that would
# make it a finding.
HANG, GROWTH = "01 longest wait / stall limit", "03 growth (nearer of 0.05 MB/batch, 50 MB)"
DRAWS, REPEATS = "12 agreeing draws / all", "13 samples two workers sent / bound"


@functools.cache
def records(path: Path) -> tuple[dict, ...]:
    return tuple(json.loads(line) for line in path.read_text().splitlines() if line.strip())


def _with(record: dict, scenario: str, level: str) -> bool:
    return any(lv == level and sc == scenario for lv, sc, _ in record["findings"])


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _judged(path: Path, scenario: str) -> list[dict]:
    """The records whose examination had this scenario's check (each record lists the checks it ran)."""
    return [run for run in records(path) if scenario in run["checks"]]


NOT_MEASURED = "not measured yet (run tests/loaders/false_alarms.py and tests/jobs/false_alarms.py with --record)"


def _runs(runs: list[dict]) -> str:
    busy = sum(run["busy"] for run in runs)
    return (f"{len(runs):,} runs of the {len({run['loader'] for run in runs})} well-built public loaders "
            f"({len(runs) - busy:,} quiet, {busy:,} with one core kept busy")


def loaders(scenario: str) -> str:
    runs = _judged(LOADERS, scenario)
    if not runs:
        return NOT_MEASURED
    risks = sum(_with(run, scenario, "risk") for run in runs)
    noted = {run["loader"] for run in runs if _with(run, scenario, "note")}
    return f"{_plural(risks, 'risk')} in {_runs(runs)}{f'; a note on {len(noted)} of them' if noted else ''})"


def _examinations(seen: list[dict], found: int) -> str:
    crossed = sum(run["crossed"] for run in seen)
    return (f"{_plural(found, 'finding')} in {_plural(len(seen), 'examination')} of "
            f"{_plural(len({run['job'] for run in seen}), 'healthy job')} ({crossed:,} of them saw a loader's "
            "workers start or end)")


def jobs(scenario: str) -> str:
    seen = _judged(JOBS, scenario)
    if not seen:
        return NOT_MEASURED
    return "doctor --pid: " + _examinations(seen, sum(sum(sc == scenario for _, sc, _ in run["findings"])
                                                      for run in seen))


def nearest(figure: str, runs=None) -> tuple[float, str, list[float]]:
    """The highest share seen (in `runs`, or the recorded ones), the loader that reached it, and that
    loader's shares in every run."""
    seen = [(run["margins"][figure], run["loader"]) for run in runs or records(LOADERS) if figure in run["margins"]]
    top, where = max(seen)
    return top, where, [share for share, name in seen if name == where]


def margin(figure: str, limit: str, runs=None) -> str:
    """How near the healthy runs came to a threshold a chance-moved figure must cross, and how far
    the threshold lies from the nearest loader's runs in their own spread (a normal tail, a rough
    chance a run)."""
    top, where, closest = nearest(figure, runs)
    mean, spread = statistics.fmean(closest), statistics.pstdev(closest)
    away = ""
    if spread:
        sigmas = (1 - mean) / spread
        chance = 1 - statistics.NormalDist().cdf(sigmas)
        tail = f", about {chance:.0e} a run if normal" if chance > 1e-12 else ""
        away = f"; the {limit} {sigmas:,.1f} sd away{tail}"
    return (f"at most {top:.3f} of the {limit} ({where}, its {len(closest)} runs: mean {mean:.3f}, "
            f"sd {spread:.3f}{away})")


def draws(reason: bool = True) -> str:
    top, where, _ = nearest(DRAWS)
    seen = f"at most {round(top * DRAW_PAIRS)} of {DRAW_PAIRS} agreed ({where})"
    return (f"a risk needs all {DRAW_PAIRS} pairs of a random sample agreeing, which a fair coin does with "
            f"probability {0.5 ** DRAW_PAIRS:.1e}; {seen}") if reason else seen


def repeats() -> str:
    shares = [run for run in records(LOADERS) if REPEATS in run["margins"]]
    top = max(run["margins"][REPEATS] for run in shares)
    most = f"at most {top:.2f} of the bound" if top else "none"
    return f"{most} in {len(shares)} runs of the {len({run['loader'] for run in shares})} loaders that read a stream"


FIELDS = {"loaders": loaders, "jobs": jobs, "hang": lambda _: margin(HANG, "stall limit"),
          "growth": lambda _: margin(GROWTH, "bound"), "draws": lambda _: draws(),
          "repeats": lambda _: repeats()}


class _Figures(dict):
    def __init__(self, scenario: str):
        super().__init__()
        self.scenario = scenario

    def __missing__(self, field: str) -> str:
        if field not in FIELDS:
            raise KeyError(f"HEALTHY of {self.scenario} names {{{field}}}; the fields are {', '.join(FIELDS)}")
        return FIELDS[field](self.scenario)


def text(check) -> str:
    """The check's HEALTHY with its figures filled in from the records."""
    return check.HEALTHY.format_map(_Figures(check.SCENARIO))


def machines() -> str:
    """What the records were taken with (measured.stamp), each machine once."""
    seen = {json.dumps(run["machine"], sort_keys=True) for run in records(LOADERS) + records(JOBS)}
    return "; ".join(stamp(Machine(**json.loads(machine))) for machine in sorted(seen))


def summary() -> str:
    """The front page's paragraph on false alarms, from the same records."""
    runs, seen = records(LOADERS), records(JOBS)
    risky = sum(any(level == "risk" for level, _, _ in run["findings"]) for run in runs)
    crowded = sum(len(run["findings"]) > 1 for run in runs)
    found = sum(len(run["findings"]) for run in seen)
    below = all(nearest(figure)[0] < 1 for figure in (HANG, GROWTH, DRAWS, REPEATS))
    return textwrap.fill(
        f"In the last recorded runs ({machines()}), {risky:,} of {_runs(list(runs))}) raised a risk, and {crowded:,} "
        f"gave a loader more than one finding. The rules chance can move "
        f"{'stayed below their thresholds' if below else 'did not all stay below their thresholds'}: the "
        f"probe's longest wait between events, {margin(HANG, 'stall limit')}; 03's measured growth, "
        f"{margin(GROWTH, 'bound')}; 12's random draws, {draws(reason=False)}; 13's samples two workers both "
        f"sent, {repeats()}. `doctor --pid` gave {_examinations(list(seen), found)}.", width=100)


def table(readmes: dict[str, str]) -> str:
    """A row per check: its rules and how often healthy loaders and jobs tripped them; `readmes` maps
    a scenario's number to its README's path from scenarios/."""
    rows = [f"Recorded on {machines()}.", "", "| # | rules | how often a healthy loader or job trips them |",
            "|---|---|---|"]
    for check in sorted(checks.CHECKS, key=lambda check: check.SCENARIO):
        rules = ", ".join(f"`{rule}`" for rule in check.FIXES)
        rows.append(f"| [{check.SCENARIO}]({readmes[check.SCENARIO]}) | {rules} | {text(check)} |")
    return "\n".join(rows)
