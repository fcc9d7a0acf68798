"""The runner: run a scenario's variants under supervision and judge them by their declarations.

    from scenarios.clinic.run import run_scenario, verdict     # notebooks, tests

Imported on first use, so that `scenarios.clinic.run.declarations` alone stays light.
"""
from scenarios.clinic import lazy_face

__getattr__ = lazy_face(__name__, {"run_scenario": "runner", "run_variant": "runner", "verdict": "report",
                                   "CannotRunHere": "declarations", "ScenarioError": "declarations"})
