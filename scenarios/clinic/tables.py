"""`tables`: every generated block that shows stored figures or declarations, rewritten from what
the repository already holds; it runs nothing.  `make figures` calls it after storing a run.

    python -m scenarios tables            # rewrite them
    python -m scenarios tables --check    # exit 1, writing nothing, where one is out of date

Scenarios are the scenarios/NN_*/ folders, fixes the fixes/*.py files; each block has one source:
- each scenario README's Measured block: its stored runs, `measured/cpu.json` then `gpu.json`
  (scenarios/clinic/measured.py);
- README.md's symptom table: each scenario.toml's [[symptoms]]; each scenario's first row (its
  main symptom) comes first, so that the table opens with one line per scenario, then the others;
- README.md's fixes table, a row per fix: its docstring's first sentence, and the fixed*.py
  scripts that import from it;
- README.md's timings and WORKSHOP.md's exercises, a row per scenario: its stored run (the cpu
  one, else the gpu one, marked † with the machine it came from) and its scenario.toml; a scenario
  without one reads "not run here";
- WORKSHOP.md's table of which scenarios run where (Linux, WSL 2, macOS, Windows, a container): each
  scenario.toml's `needs` (scenarios/clinic/platforms.py);
- HEALTHY.md's table, a row per doctor check, and README.md's false-alarms paragraph: the recorded
  runs of healthy loaders and jobs (scenarios/clinic/doctor/healthy.py);
- README.md's explain rates: tests/logs/RATES.json, what `python tests/logs/rates.py --store` measured
  on each labelled log set, and before any change made for it where the set was gathered after its rules.
"""
from __future__ import annotations

import ast
import collections
import json
import re
import sys
import textwrap

from scenarios.clinic import REPO_ROOT, SCENARIOS_DIR
from scenarios.clinic.blocks import read_block, replace_block
from scenarios.clinic.doctor import healthy
from scenarios.clinic.run.declarations import ScenarioError, discover
from scenarios.clinic.measured import MEASURED, block_body, load_all, shown_run, stamp
from scenarios.clinic.platforms import runs_where_table
from scenarios.host import EXIT_BAD_INPUT, EXIT_NOT_AS_EXPECTED, EXIT_OK

FRONT_PAGE, WORKSHOP, HEALTHY = REPO_ROOT / "README.md", SCENARIOS_DIR / "WORKSHOP.md", SCENARIOS_DIR / "HEALTHY.md"
NOT_RUN = "not run here"
RATES = REPO_ROOT / "tests" / "logs" / "RATES.json"
# Each log set shown below the public one, and how it was gathered (its SOURCES.md or README.md says more).
GATHERED = {"held-out": "after the confidence levels were written",
            "held-out-36": "of scenarios 29–34, after their rules",
            "held-out-48": "after the rules of 29–40, by a helper who had not read them",
            "held-out-50": "after the rules for printed output and many ranks, by a helper who had not read them",
            "shared-a": "by people outside the project who had not read its rules, used once blind",
            "shared-b": "by people outside the project, from public issue threads"}
NEED_WORDS = {"linux": "Linux", "fork": "fork", "userns": "user namespaces", "memory_cgroup": "a memory cgroup",
              "cuda": "a CUDA GPU"}


def _source(what: str) -> str:
    return f"<!-- written by `python -m scenarios tables` (make figures) from {what}: edit those, not this -->"


def symptom_table(scenarios: dict) -> str:
    rows = [(index > 0, number, index, symptom) for number, scenario in scenarios.items()
            for index, symptom in enumerate(scenario.symptoms)]
    lines = [_source("each scenario.toml's [[symptoms]]"), "| symptom you see | scenario | cause |", "|---|---|---|"]
    for _, number, _, symptom in sorted(rows, key=lambda row: row[:3]):
        link = f"[{number}](scenarios/{scenarios[number].slug}/)"
        lines.append(f"| {symptom['seen']} | {link} | {symptom['cause']} |")
    return "\n".join(lines)


def first_sentence(docstring: str) -> str:
    return re.split(r"(?<=\.)\s", " ".join(docstring.split()), maxsplit=1)[0]


def fix_users() -> dict[str, tuple[set, set]]:
    """fixes module -> (the scenarios whose fixed*.py import from it, the names they import)."""
    users = collections.defaultdict(lambda: (set(), set()))
    for script in SCENARIOS_DIR.glob("[0-9][0-9]_*/fixed*.py"):
        for node in ast.walk(ast.parse(script.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fixes."):
                numbers, names = users[node.module.split(".")[1]]
                numbers.add(script.parent.name[:2])
                names.update(alias.name for alias in node.names)
    return users


def fixes_table() -> str:
    users = fix_users()
    modules = sorted((p for p in (REPO_ROOT / "fixes").glob("*.py") if p.name != "__init__.py"),
                     key=lambda p: (sorted(users[p.stem][0]) or ["99"], p.stem))
    lines = [_source("each fixes/*.py's docstring and the fixed*.py that import from it"),
             "| module | what it gives you | what our `fixed.py` imports | scenario |", "|---|---|---|---|"]
    for path in modules:
        summary = first_sentence(ast.get_docstring(ast.parse(path.read_text())) or "").replace("|", "\\|")
        numbers, names = users[path.stem]
        lines.append(f"| `{path.name}` | {summary} | {', '.join(f'`{n}`' for n in sorted(names))} "
                     f"| {', '.join(sorted(numbers)) or 'none'} |")
    return "\n".join(lines)


def _shown(scenarios: dict) -> dict:
    """number -> the stored run each table shows (measured.shown_run), or None."""
    return {number: shown_run(load_all(scenario.path)) for number, scenario in scenarios.items()}


def _stamps(shown: dict) -> tuple[str, dict[str, str]]:
    """The stamp most runs share, and each scenario measured with another (its figures say so)."""
    stamps = {number: stamp(record.machine, cpu_model=False) for number, record in shown.items() if record}
    common = collections.Counter(stamps.values()).most_common(1)
    usual = common[0][0] if common else "nothing measured yet"
    return usual, {number: s for number, s in stamps.items() if s != usual}


def _footnotes(others: dict[str, str], shown: dict) -> list[str]:
    """One † line per other machine, naming its scenarios, and any variant that ran there not as declared."""
    lines = []
    for other in dict.fromkeys(others.values()):
        numbers = [number for number, s in others.items() if s == other]
        differed = [f"{number}'s {', '.join(f'`{v}`' for v in shown[number].not_as_declared())}"
                    for number in numbers if shown[number].not_as_declared()]
        lines.append(f"† {', '.join(numbers)}: measured with {other}"
                     + (f"; not as declared there: {'; '.join(differed)}." if differed else "."))
    return ["", *lines] if lines else []


def _timing_row(number: str, seconds: dict | None, other_stamp: bool) -> str:
    if seconds is None:
        return f"| {number} | {NOT_RUN} | {NOT_RUN} | |"
    slowest = max(seconds, key=seconds.get)
    return (f"| {number}{' †' if other_stamp else ''} | {seconds['broken'] + seconds['fixed']:.0f} s "
            f"| {sum(seconds.values()):.0f} s | `{slowest}` {seconds[slowest]:.0f} s |")


def _in_all(runs: dict, others: dict, missing: list) -> str:
    """The sums, of the runs made with the usual stamp alone: seconds of two machines do not add."""
    usual = {number: s for number, s in runs.items() if number not in others}
    text = (f"In all: {sum(s['broken'] + s['fixed'] for s in usual.values()):.0f} s for `make workshop` "
            f"(broken + fixed), {sum(sum(s.values()) for s in usual.values()):.0f} s for every variant")
    text += f"; {', '.join(others)} (†) left out" if others else ""
    return text + (f"; {', '.join(missing)}: {NOT_RUN}." if missing else ".")


def timings_table(scenarios: dict) -> str:
    shown = _shown(scenarios)
    usual, others = _stamps(shown)
    runs = {number: record.seconds() for number, record in shown.items()
            if record and {"broken", "fixed"} <= set(record.variants)}
    missing = [number for number in shown if number not in runs]
    lines = [f"Summed from each scenario's stored run (`measured/`, written by `make figures`, one run of every "
             f"variant): {usual}.", "",
             "| scenario | broken + fixed | every variant | slowest variant |", "|---|---|---|---|"]
    lines += [_timing_row(number, runs.get(number), number in others) for number in shown]
    lines += ["", _in_all(runs, others, missing)]
    return "\n".join(lines + _footnotes(others, shown))


def exercises_table(scenarios: dict) -> str:
    shown = _shown(scenarios)
    usual, others = _stamps(shown)
    lines = [f"`fixed.py`'s run: the `fixed` variant of the scenario's stored run (`measured/`, written by "
             f"`make figures`): {usual}.", "",
             "| # | what it teaches | `fixed.py`'s run | limit | runs on |", "|---|---|---|---|---|"]
    for number, scenario in scenarios.items():
        fixed = shown[number].seconds().get("fixed") if shown[number] else None
        run = f"{fixed:.0f} s{' †' if number in others else ''}" if fixed is not None else NOT_RUN
        needs = " + ".join(NEED_WORDS.get(need, need) for need in scenario.needs) or "anywhere"
        lines.append(f"| [{number}]({scenario.slug}/README.md) | {scenario.exercise.get('lesson', 'no exercise yet')} "
                     f"| {run} | {scenario.limit_for('fixed'):.0f} s | {needs} |")
    return "\n".join(lines + _footnotes(others, shown))


def _public_rates(f: dict) -> str:
    return textwrap.fill(
        f"Measured on {f['logs']} logs from public issue threads (`tests/logs/public/SOURCES.md`, labelled by the "
        f"lesson that fixes each): {f['right']} of the {f['error_logs']} error logs named right first at *certain* "
        f"or *likely* ({f['wrong']} wrong, {f['silent']} named at neither), {f['asked']} of the "
        f"{f['undecidable']} whose text cannot decide asked (*possible* only, with the question that decides), and on "
        f"{f['clean_logs'] - f['clean_named']} of the {f['clean_logs']} no lesson of the clinic fixes it names "
        "nothing at *certain* or *likely* (a collective timeout, which 30 and 31 both print, is *possible*).",
        width=100)


def _of(now: dict, first: dict | None, count: str, total: str) -> str:
    """'N of M' now, and in brackets as first measured, where the set holds that figure from then."""
    if not now[total]:
        return "—"
    then = f" ({first[count]}{f' of {first[total]}' if total in first else ''})" if first and count in first else ""
    return f"{now[count]} of {now[total]}{then}"


def explain_rates() -> str:
    """The front page's figures for `explain`, from each log set's stored ones (tests/logs/RATES.json)."""
    if not RATES.is_file():
        return "explain's rates: not measured yet (run `python tests/logs/rates.py --store`)"
    sets = json.loads(RATES.read_text(encoding="utf-8"))["sets"]
    lines = [_source("tests/logs/RATES.json, which `python tests/logs/rates.py --store` measures"),
             _public_rates(sets["public"]["measured"]), "",
             textwrap.fill("The other sets, measured now and, in brackets, before any change made for those gathered "
                           "after the rules they test (—: the set has no such log):", width=100), "",
             "| logs | gathered | error logs right first at *certain* or *likely* | undecidable ones asked "
             "| clean ones named at *certain* or *likely* | printed output right first |", "|---|---|---|---|---|---|"]
    for name, gathered in GATHERED.items():
        now, first = sets[name]["measured"], sets[name].get("first_measured")
        lines.append(f"| {now['logs']}, `tests/logs/{name}/` | {gathered} | {_of(now, first, 'right', 'error_logs')} "
                     f"| {_of(now, first, 'asked', 'undecidable')} | {_of(now, first, 'clean_named', 'clean_logs')} "
                     f"| {_of(now, first, 'printed_right', 'printed')} |")
    return "\n".join(lines + ["", textwrap.fill(
        "An undecidable log that is not asked counts among the error logs too, as wrong; a printed log (output with "
        "no error text) is right where its first finding, *likely* or *possible*, names its lesson.", width=100)])


def rendered() -> dict[tuple, str]:
    """(file, block name) -> the block's body as it should read now."""
    scenarios = discover()
    return {(FRONT_PAGE, "symptoms"): symptom_table(scenarios),
            (FRONT_PAGE, "fixes"): fixes_table(),
            (FRONT_PAGE, "timings"): timings_table(scenarios),
            (WORKSHOP, "exercises"): exercises_table(scenarios),
            (WORKSHOP, "runs-where"): runs_where_table(scenarios, NEED_WORDS, _source("each scenario.toml's needs")),
            (HEALTHY, "healthy"): healthy.table({number: f"{scenario.slug}/README.md"
                                                 for number, scenario in scenarios.items()}),
            (FRONT_PAGE, "false-alarms"): healthy.summary(),
            (FRONT_PAGE, "explain-rates"): explain_rates(),
            **{(scenario.path / "README.md", MEASURED): block_body(load_all(scenario.path))
               for scenario in scenarios.values()}}


def _out_of_date() -> dict[tuple, str]:
    return {(path, name): body for (path, name), body in rendered().items() if read_block(path, name) != body}


def _label(path, name: str) -> str:
    return f"{path.relative_to(REPO_ROOT)}: {name}"


def stale() -> list[str]:
    """The blocks that differ from what `tables` would write."""
    return [_label(*key) for key in _out_of_date()]


def write() -> list[str]:
    """Rewrite the blocks that are out of date, and only those: others may be editing these files."""
    out_of_date = _out_of_date()
    for (path, name), body in out_of_date.items():
        replace_block(path, name, body)
    return [_label(*key) for key in out_of_date]


def arguments(name: str, parser) -> None:
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 and name each table that is out of date")


def run(args) -> int:
    if args.check:
        out_of_date = stale()
        for block in out_of_date:
            print(f"out of date: {block} (run `python -m scenarios tables`)", file=sys.stderr)
        return EXIT_NOT_AS_EXPECTED if out_of_date else EXIT_OK
    try:
        written = write()
    except ScenarioError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"rewrote {', '.join(written)}" if written else "every generated table was up to date", file=sys.stderr)
    return EXIT_OK
