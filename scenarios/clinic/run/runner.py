"""The one runner: runs a scenario's variants, measures them, judges them.

Makefile, notebooks and tests all come through `run_scenario()` (the command line in
`scenarios/clinic/cli.py` is a thin wrapper around it).  Each variant's script runs in
a session of its own under a hard time limit (supervise.py); while it runs, the
memory of the script and of every worker below it is sampled (sampling.py); when it
ends, for whatever reason, the whole tree is killed and reaped, and any
`/dev/shm/torch_*` file it left is removed and reported.  The run is then judged
against the scenario's declaration (declarations.py, judge.py).

A script reports a figure by printing a line `metric NAME=VALUE`; the runner adds
figures of its own from the memory samples (`sampled_*`).

A variant's result (run_variant) is one dict, the shape every reader relies on: result.VariantResult.
run_scenario returns {scenario, slug, title, python, torch, reproduced, fixed, cannot_run,
variants: {name: result}}.

Set CLINIC_RESULTS_DIR to a folder to keep every result there and reuse it: the test
suite does, so that a variant runs once per suite however many tests and notebooks
read it.  CLINIC_OBSERVE_FIXED (the suite sets it too) runs each exercise's `fixed` as the
grader runs an attempt, hook included: the grader's tests judge that one run of fixed.py as an
attempt instead of running it a second time.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path


from scenarios.clinic.run import judge
from scenarios.clinic.run.observe import hook_env
from scenarios.clinic.run.declarations import CannotRunHere, Scenario, ScenarioError, get_scenario, missing_needs
from scenarios.clinic.run.report import LiveStatus, verdict  # noqa: F401  (notebooks import verdict from here)
from scenarios.clinic.run.report import torch_version
from scenarios.clinic.run.result import VariantResult
from scenarios.clinic.run.sampling import SAMPLE_EVERY_S, MemorySeries
from scenarios.clinic.run.shm_leaks import remove_leaked_shm, shm_names
from scenarios.clinic.run.supervise import Supervised

RESULTS_ENV = "CLINIC_RESULTS_DIR"
OBSERVE_FIXED_ENV = "CLINIC_OBSERVE_FIXED"
OUTPUT_TAIL_LINES = 200      # what a report shows
OUTPUT_KEPT_LINES = 20_000   # what a result keeps for tests and notebooks: every line of any variant here


def run_variant(scenario: Scenario, variant: str, show=None, script: Path | None = None,
                env: dict[str, str] | None = None, observe: bool | None = None) -> VariantResult:
    """Run one variant to its end or its limit and return what was observed.

    `script`: run this file instead of the variant's own (a workshop attempt), under the
    variant's limit and judged by its declaration; the scenario's folder is importable
    from it, as it is from the scenario's own scripts (its helper modules).  `env`: variables
    set for the run on top of this process's (the grader's seed).  `observe`: the grading hook in
    its interpreters (observe.py); None: where a script is given, as an attempt has it."""
    limit_s = scenario.limit_for(variant)
    live = LiveStatus(f"{scenario.number} {'attempt' if script else variant}", show)
    shm_before = shm_names()
    memory = MemorySeries()
    started = time.monotonic()
    hooked = script is not None if observe is None else observe
    run = Supervised(script or scenario.script(variant), on_line=live.echo,
                     importable=(scenario.path,) if script else (), observe=hooked, env=env)
    timed_out, stacks = False, ""
    try:
        timed_out, stacks = _watch(run, started, limit_s, memory, live)
    finally:  # also on Ctrl-C, and on SIGTERM or SIGHUP to the command line: nothing outlives the run
        seconds = time.monotonic() - started
        survivors = run.finish()
        if "memory_cgroup" in scenario.needs:  # a script killed at its limit cannot remove its group
            from scenarios.memory_group import remove_stale_groups
            remove_stale_groups()
        live.close()
    leaked = remove_leaked_shm(shm_before, run.seen, run.semaphores)
    result = _result(run, scenario.variants[variant], timed_out, round(seconds, 2), memory)
    result.update(limit_s=limit_s, stacks=stacks, leaked_shm_files=leaked, surviving_processes=survivors)
    result["unjudged"] = judge.unjudged(scenario.variants[variant], result)
    result["breaches"] = [breach.record() for breach in judge.breaches(scenario.variants[variant], result)]
    result["as_expected"] = not result["breaches"]
    return result


def _watch(run: Supervised, started: float, limit_s: float, memory: MemorySeries, live) -> tuple[bool, str]:
    """Sample the run's memory until it ends; at its limit, (True, where it was stuck)."""
    while run.exit_status() is None:
        elapsed = time.monotonic() - started
        if elapsed > limit_s:
            return True, run.where_stuck()
        script = run.script()
        if script is not None:
            sample = memory.sample(elapsed, script, run.processes())
            if sample:
                live.update(elapsed, sample)
        run.wait_noting_processes(SAMPLE_EVERY_S)
    return False, ""


def _result(run: Supervised, spec: dict, timed_out: bool, seconds: float, memory: MemorySeries) -> dict:
    """The result (result.VariantResult) from what the runner saw; run_variant adds the rest."""
    exit_status = run.exit_status()
    exit_status = -signal.SIGKILL if exit_status is None else exit_status
    lines = run.lines
    outcome = judge.classify(exit_status, timed_out, lines)
    metrics = judge.script_metrics(lines)
    metrics["seconds"] = seconds
    metrics["cpu_s"] = run.cpu_s  # every process of the run, user + system
    metrics.update(memory.metrics())
    result = {
        "outcome": outcome,
        "exit_code": exit_status,
        "signal": signal.Signals(-exit_status).name if exit_status < 0 else None,
        "seconds": seconds,
        "evidence": judge.evidence(outcome, spec.get("evidence"), lines, timed_out),
        "metrics": metrics,
        "output_tail": "\n".join(lines[-OUTPUT_TAIL_LINES:]),
        "output": _kept(lines),
        "memory": memory.samples,
        # Every process that ran below the script, whatever its lifetime (helpers such as
        # torch_shm_manager aside): the workers the runner saw, not what the script says.
        "worker_processes_seen": run.workers_seen({w.get("pid") for w in (run.observations or {}).get("workers", [])
                                                   if w.get("pid") is not None} if run.observed else set()),
    }
    if run.observed:  # an attempt: what its DataLoaders did, recorded inside PyTorch (observe.py)
        result["observed"] = run.observations
    return result


def _kept(lines: list[str]) -> str:
    """The whole output; past OUTPUT_KEPT_LINES, its start and end with a line saying what was cut."""
    if len(lines) <= OUTPUT_KEPT_LINES:
        return "\n".join(lines)
    head = OUTPUT_KEPT_LINES // 10
    cut = len(lines) - OUTPUT_KEPT_LINES
    return "\n".join(lines[:head] + [f"[… {cut} lines cut here by the runner …]"]
                     + lines[-(OUTPUT_KEPT_LINES - head):])


def _recorded(scenario: Scenario, variant: str) -> Path | None:
    folder = os.environ.get(RESULTS_ENV)
    return Path(folder) / f"{scenario.slug}.{variant}.json" if folder else None


def run_scenario(number: str, variants=("broken", "fixed"), show=None) -> dict:
    """Run the named variants ("all" for every declared one) and judge them.

    `show`: a stream for the live status line and the scripts' output, or None.
    """
    scenario = get_scenario(number)
    why_not = missing_needs(scenario)
    if why_not:
        raise CannotRunHere(f"scenario {scenario.number}", why_not)
    names = list(scenario.variants) if variants in ("all", ["all"], ("all",)) else list(variants)
    unknown = [v for v in names if v not in scenario.variants]
    if unknown:
        raise ScenarioError(f"scenario {scenario.number} has no variant {', '.join(unknown)}; "
                            f"scenarios/{scenario.slug}/scenario.toml declares: {', '.join(scenario.variants)}")
    results = {}
    for name in names:
        recorded = _recorded(scenario, name)
        if recorded and recorded.is_file():
            results[name] = json.loads(recorded.read_text())
            results[name]["reused"] = True
            continue
        if show:
            print(f"\n▶ scenarios/{scenario.slug}/{name}.py  (limit {scenario.limit_for(name):g} s)",
                  file=show, flush=True)
        graded = name == "fixed" and scenario.exercise and os.environ.get(OBSERVE_FIXED_ENV)
        extra = {"observe": True, "env": hook_env(scenario.exercise.get("observe", {}))} if graded else {}
        results[name] = run_variant(scenario, name, show, **extra)
        if recorded:
            recorded.write_text(json.dumps(results[name]))
    return {
        "scenario": scenario.number,
        "slug": scenario.slug,
        "title": scenario.title,
        "python": sys.version.split()[0],
        "torch": torch_version(),
        "reproduced": results["broken"]["as_expected"] if "broken" in results else None,
        "fixed": results["fixed"]["as_expected"] if "fixed" in results else None,
        "cannot_run": any(r["outcome"] == "cannot-run" for r in results.values()),
        "variants": results,
    }

