"""The doctor: this machine (machine.py), and the user's own DataLoader (examine.py, with one
check module per scenario in checks/).  The names a notebook or a test needs:

    from scenarios.clinic.doctor import examine, examine_file
"""
from scenarios.clinic.doctor.commands import examine_main as main  # noqa: F401
from scenarios.clinic.doctor.examine import examine, examine_file, run_checks  # noqa: F401
from scenarios.clinic.doctor.findings import BadInput, Finding, Findings  # noqa: F401
from scenarios.clinic.doctor.loading import load_loader  # noqa: F401
from scenarios.clinic.doctor.setup import Examined, describe  # noqa: F401
