"""The doctor: this machine (machine.py), a user's own DataLoader (engine.py runs one check
module per scenario, checks/), a job running now (running.py), processes left behind
(orphans.py) and a pasted log (explain.py).  The names a notebook or a test needs:

    from scenarios.clinic.doctor import examine, examine_file

Names are imported on first use (scenarios/clinic/__init__.py).
"""
from scenarios.clinic import lazy_face

__getattr__ = lazy_face(__name__, {
    "main": "commands:examine_main",
    "examine": "engine", "examine_file": "engine", "run_checks": "engine", "examine_running": "engine",
    "BadInput": "findings", "Finding": "findings", "Findings": "findings", "load_loader": "loading",
    "Examined": "setup", "describe": "setup",
})
