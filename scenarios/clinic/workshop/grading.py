"""The grade: one run of the attempt through the runner, judged against the fixed variant."""
from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

from scenarios.clinic.paths import shown
from scenarios.clinic.run import judge
from scenarios.clinic.run.observe import hook_env
from scenarios.clinic.run.declarations import (CannotRunHere, Scenario, ScenarioError, get_scenario, missing_needs)
from scenarios.clinic.workshop.rules import (AttemptSyntaxError, CANNOT_RUN, Grade, NOT_YET, PASSED,
                                             attempt_path, exercise_of, read_attempt, static_problems)
from scenarios.clinic.workshop import killed_job
from scenarios.clinic.workshop.observations import observation_problems
from scenarios.synthetic_data import GRADING_SEED


# ---------------------------------------------------------------- the grade

def _sentence(breach: judge.Breach, spec: dict, result: dict) -> str:
    """A breach of the fixed declaration, said for an attendee."""
    if breach.kind is judge.Differs.OUTCOME:
        outcome = result["outcome"]
        said = {"hang": f"it was still waiting after its {result['limit_s']:g} s limit (a hang)",
                "error": "it ended with an error",
                "signal": f"it was killed by {result.get('signal') or 'a signal'}",
                "completed": "it completed"}.get(outcome, outcome)
        return f"{said}; fixed needs it to {spec['expect'].replace('completed', 'complete')}"
    if breach.kind is judge.Differs.EVIDENCE:
        return f"its output has no line like /{spec.get('evidence')}/, which the fixed run prints"
    if breach.kind is judge.Differs.UNMEASURED:
        name = breach.metric
        if name.startswith("sampled_"):
            return f"the runner measured no {name} (no worker lived long enough to be sampled)"
        return f"it never reported {name} (a `metric {name}=…` line): keep broken.py's measurements"
    if breach.kind in (judge.Differs.BELOW, judge.Differs.ABOVE):
        name = breach.metric
        need = "at least" if breach.kind is judge.Differs.BELOW else "at most"
        who = "the runner measured" if name.startswith("sampled_") or name == "seconds" else "it reported"
        return f"{who} {name}={breach.value:g}; fixed needs {need} {breach.bound:g}"
    return str(breach)


def _fixed_spec(scenario: Scenario, exercise: dict) -> dict:
    """`[variants.fixed]`, less the figures only our own fix reports, plus the exercise's own bounds."""
    spec = dict(scenario.variants["fixed"])
    ignored = set(exercise.get("ignore", []))
    spec["metrics"] = {name: bounds for name, bounds in spec.get("metrics", {}).items() if name not in ignored}
    spec["metrics"].update(exercise.get("metrics", {}))
    if "evidence" in exercise:  # what every sound fix prints, where fixed.py's own line is one of them
        spec["evidence"] = exercise["evidence"]
    return spec


def _run_problems(exercise: dict, spec: dict, result: dict, ended: bool) -> list[str]:
    """How the run ended, and the worker processes the runner saw below the script."""
    # A run that crashed, hung or was killed says so first: the batches it never delivered and the
    # figures it never printed follow from that, and "run the whole workload" would mislead.
    problems = [] if ended else [_sentence(judge.Breach(judge.Differs.OUTCOME, value=result["outcome"],
                                                        bound=spec["expect"]), spec, result)]
    wanted = exercise.get("min_workers", 1)
    workers = result.get("worker_processes_seen")
    if workers is not None and workers < wanted:
        problems.append(f"the runner saw {workers} worker process{'es' if workers != 1 else ''} below "
                        f"the script; the exercise needs at least {wanted}: it is about DataLoader workers, "
                        "and fewer of them (num_workers=0, say) hides a failure instead of fixing it")
    if result.get("observed") is not None:  # an attempt's run: what its DataLoaders did
        problems += observation_problems(exercise.get("observe", {}), result["observed"], result.get("metrics"), ended)
    if "killed_job" in result:  # its job, killed by the grader itself (20)
        problems += killed_job.problems(exercise["kill_job"], result["killed_job"])
    return problems


def _figure_problems(spec: dict, result: dict, lines: list[str], ended: bool) -> list[str]:
    """The figures the script printed, against fixed's bounds; each printed once."""
    problems = []
    reported: dict[str, list[float]] = {}
    for match in filter(None, map(judge.METRIC_LINE.match, lines)):
        reported.setdefault(match.group(1), []).append(float(match.group(2)))
    for name, values in reported.items():
        if len(set(values)) > 1:
            problems.append(f"it reported {name} {len(values)} times ({', '.join(f'{v:g}' for v in values)}); "
                            "a figure is reported once")
    breaches = [b for b in judge.breaches(spec, result) if b.kind is not judge.Differs.OUTCOME]  # said first
    if not ended:  # figures never reported follow from that: say it once
        breaches = [b for b in breaches if b.kind is not judge.Differs.UNMEASURED]
    problems += [_sentence(breach, spec, result) for breach in breaches]
    # A timing bound the machine's load left unjudged is no pass: grade again when it is quieter.
    problems += [f"{line}; grade again on a quieter machine" for line in result.get("unjudged", [])]
    if result.get("surviving_processes"):
        problems.append(f"{result['surviving_processes']} process(es) outlived the run")
    return problems


def grade(scenario: Scenario, result: dict | None, attempt_source: str, broken_source: str,
          file: str = "") -> Grade:
    """Judge one recorded run of an attempt (no run here): static checks, the runner's own
    checks, and the scenario's declaration of `fixed`."""
    exercise = exercise_of(scenario)
    problems = static_problems(scenario, attempt_source, broken_source)
    if result is None:
        return Grade(scenario.number, file, NOT_YET, problems, {"ran": False})
    seen = {"outcome": result["outcome"], "seconds": result["seconds"],
            "worker_processes": result.get("worker_processes_seen"), "evidence": result.get("evidence", ""),
            "not_judged": list(exercise.get("not_judged", []))}
    if result.get("observed") is not None:
        seen["dataloader_workers"] = result["observed"].get("real_workers")
    if result["outcome"] == "cannot-run":
        return Grade(scenario.number, file, CANNOT_RUN, [f"this machine cannot run it: {seen['evidence']}"],
                     seen, result)
    spec = _fixed_spec(scenario, exercise)
    result, lines = _read_as_fixed(spec, result)
    seen["evidence"] = result["evidence"]
    ended = result["outcome"] == spec["expect"]
    problems += _run_problems(exercise, spec, result, ended) + _figure_problems(spec, result, lines, ended)
    problems += _unhooked_problems(spec, result)
    return Grade(scenario.number, file, NOT_YET if problems else PASSED, problems, seen, result)


def _read_as_fixed(spec: dict, result: dict) -> tuple[dict, list[str]]:
    """The run with its evidence line found again by the pattern of `fixed` (a recorded run of another
    variant was summed up by its own pattern), and its output's lines."""
    lines = result.get("output_tail", "").splitlines()
    return dict(result, evidence=judge.evidence(result["outcome"], spec.get("evidence"), lines,
                                                result["outcome"] == "hang")), lines


def _unhooked_problems(spec: dict, result: dict) -> list[str]:
    """The attempt run again without the hook (the exercise's `unhooked`): an attempt that does one thing
    where the hook watches and another where it does not is judged on both runs, by fixed's declaration."""
    alone = result.get("unhooked")
    if alone is None:
        return []
    alone, _ = _read_as_fixed(spec, alone)
    said = [_sentence(breach, spec, alone) for breach in judge.breaches(spec, alone)]
    return [f"run again without the grader's hook, it did otherwise: {'; '.join(said)}"] if said else []


def check(number: str, file: str | Path | None = None, show=None, record: bool = True) -> Grade:
    """Run the attempt (default: workshop/NN_slug.py) through the runner and grade it.
    Bad input raises ScenarioError; a machine that cannot run it, CannotRunHere."""
    from scenarios.clinic.run.runner import run_variant  # imports psutil; the other commands need not

    scenario = get_scenario(number)
    path = Path(file) if file else attempt_path(scenario)
    if not file and not path.is_file():
        raise ScenarioError(f"no attempt {shown(path)} yet: `make practice-{scenario.number}` makes it")
    source = read_attempt(path)
    broken_source = scenario.script("broken").read_text()
    why_not = missing_needs(scenario)
    if why_not:
        raise CannotRunHere(f"scenario {scenario.number}", why_not)
    problems = static_problems(scenario, source, broken_source)
    env = _env_for(scenario)
    if problems:  # no run: what it changed is the answer, and it is instant
        result = None
    else:
        if show:
            print(f"▶ {shown(path)}  (graded as scenario {scenario.number}'s fixed.py: "
                  f"limit {scenario.limit_for('fixed'):g} s)", file=show, flush=True)
        result = run_variant(scenario, "fixed", show, script=path.resolve(), env=env)
        if exercise_of(scenario).get("unhooked") and result["outcome"] != "cannot-run":
            if show:
                print("▶ the attempt again, without the grader's hook", file=show, flush=True)
            result["unhooked"] = run_variant(scenario, "fixed", show, script=path.resolve(), env=env, observe=False)
        if "kill_job" in exercise_of(scenario) and result["outcome"] != "cannot-run":
            if show:
                print("▶ the attempt's training job again, killed by the grader itself", file=show, flush=True)
            result["killed_job"] = killed_job.run(path.resolve(), scenario.path, exercise_of(scenario)["kill_job"],
                                                  scenario.limit_for("fixed"))
    graded = grade(scenario, result, source, broken_source, file=shown(path))
    if result is not None and GRADING_SEED in env:
        graded.seen["seed"] = int(env[GRADING_SEED])
    if record and path.resolve() == attempt_path(scenario).resolve():
        from scenarios.clinic.workshop.progress import record_grade
        record_grade(scenario, graded, source)
    return graded


def _env_for(scenario: Scenario) -> dict[str, str]:
    """Where the exercise's bad items move with a seed (`seeded`), one picked now, unless the
    attendee set CLINIC_GRADING_SEED to grade again against the same places; where it judges each
    tensor's rows (`unique = "every field"`) or each sample's index (`requested`), the hook told to record them."""
    exercise = exercise_of(scenario)
    env = hook_env(exercise.get("observe", {}))
    if exercise.get("seeded"):
        given = os.environ.get(GRADING_SEED, "").strip()
        if given and not given.isdigit():
            raise ScenarioError(f"{GRADING_SEED}={given!r} is not a seed: give a whole number, or unset it")
        env[GRADING_SEED] = given or str(secrets.randbelow(1_000_000))
    return env


def grade_text(graded: Grade) -> str:
    """What an attendee reads after `check`."""
    seen = graded.seen
    if seen.get("ran") is False:
        ran = "not run: the changes below are enough to say"
    else:
        workers = seen.get("worker_processes")
        ran = (f"ran {seen['seconds']:g} s, outcome {seen['outcome']}, "
               f"{workers if workers is not None else '?'} worker processes seen by the runner")
        if seen.get("dataloader_workers") is not None:
            ran += f", {seen['dataloader_workers']} of them ran PyTorch's worker loop"
    head = {PASSED: "✔ passed", NOT_YET: "✘ not yet", CANNOT_RUN: "– cannot run here"}[graded.state]
    lines = [f"{head}: exercise {graded.scenario} · {graded.file} · {ran}"]
    if seen.get("evidence") and graded.state != CANNOT_RUN:
        lines.append(f"  last word: {seen['evidence']}")
    if seen.get("seed") is not None:
        lines.append(f"  the bad items were placed by seed {seen['seed']}; "
                     f"{GRADING_SEED}={seen['seed']} make check-{graded.scenario} places them there again")
    lines += [f"  - {problem}" for problem in graded.problems]
    lines += [f"  not judged: {what}" for what in seen.get("not_judged", [])]
    stacks = (graded.result or {}).get("stacks") or ""
    if graded.result and graded.result["outcome"] == "hang" and stacks:
        lines.append("  where each process waited when the limit hit (innermost calls first; all of it: --json):")
        lines += [f"    {line}" for line in _short_stacks(stacks)]
    if graded.state == NOT_YET:
        lines.append(f"  next: make hint-{graded.scenario} · read the README's Root cause"
                     f" · make check-{graded.scenario}")
    return "\n".join(lines)


def _short_stacks(stacks: str, frames: int = 4) -> list[str]:
    """A py-spy dump, shortened: each process, each of its threads but the queue feeders, and
    their innermost frames."""
    shown, keep = [], 0
    for line in stacks.splitlines():
        if line.startswith(("Process ", "Python v")):
            keep = 0
            shown += [line] if line.startswith("Process ") else []
        elif line.lstrip().startswith("Thread "):
            keep = 0 if "QueueFeederThread" in line else frames
            shown += [line.strip()] if keep else []
        elif keep and line.strip():
            shown.append("  " + line.strip())
            keep -= 1
    return shown


def say_bad_input(err: ScenarioError, stream=sys.stderr) -> None:
    """Bad input as one line (a syntax error: the attendee's own, as Python shows it)."""
    if isinstance(err, AttemptSyntaxError):
        print(f"error: the attempt is not valid Python:\n{err}", file=stream)
    else:
        print(f"error: {err}", file=stream)
