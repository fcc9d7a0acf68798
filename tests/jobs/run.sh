#!/bin/bash
# A launcher as users write one: bash starts the training script and waits for it (no exec), so
# the PID a user sees in `ps` or gets from a scheduler is the shell's, not the trainer's.
# Usage: bash run.sh JOB.py [ARGS...]
cd "$(dirname "$0")" || exit 2
"${PYTHON:-python}" "$@"
