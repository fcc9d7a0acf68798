"""The runner: run a scenario's variants under supervision and judge them by their declarations.

    from scenarios.clinic.run import run_scenario, verdict     # notebooks, tests

Imported on first use, so that `scenarios.clinic.run.declarations` alone stays light.
"""
import importlib

_WHERE = {"run_scenario": "runner", "run_variant": "runner", "verdict": "report",
          "CannotRunHere": "declarations", "ScenarioError": "declarations"}


def __getattr__(name):
    if name in _WHERE:
        return getattr(importlib.import_module(f"scenarios.clinic.run.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'scenarios.clinic.run' has no attribute {name!r}")
