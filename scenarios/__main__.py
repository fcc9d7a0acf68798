"""`python -m scenarios …`: the command table is scenarios/clinic/cli.py."""
import sys

from scenarios.clinic.cli import run_command_line

if __name__ == "__main__":
    sys.exit(run_command_line())
