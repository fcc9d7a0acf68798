"""Scenario 23, measurement: broken.py and the TOKENIZERS_PARALLELISM=true myth under forkserver.

    python scenarios/23_tokenizers_before_fork/measure_forkserver.py

forkserver is the default start method on Linux from Python 3.14.  Its workers are forked
from a fork server, a fresh interpreter started before the main process tokenized anything,
so no worker inherits a used thread pool.  This script runs broken.py's main() with
multiprocessing_context="forkserver" twice: as it is, then in a new interpreter whose
environment has TOKENIZERS_PARALLELISM=true (the fork server takes its environment when it
starts, hence the new interpreter).  Each run reports the threads its worker's tokenizer
started, and the second one would hang as myth_parallelism_true.py does if the worker had
inherited the pool.
"""
import os
import subprocess
import sys

from broken import main as broken_main

VARIABLE = "TOKENIZERS_PARALLELISM"


def run_here():
    label = f"{VARIABLE}={os.environ[VARIABLE]}" if VARIABLE in os.environ else f"{VARIABLE} unset"
    threads = broken_main(context="forkserver")
    print(f"forkserver, {label}: the worker's tokenizer started {threads} threads of its own, no hang", flush=True)
    print(f"metric forkserver_{'true' if VARIABLE in os.environ else 'unset'}_threads={threads}", flush=True)


def main():
    if "--variable-true" in sys.argv:
        return run_here()
    os.environ.pop(VARIABLE, None)
    run_here()
    try:
        done = subprocess.run([sys.executable, __file__, "--variable-true"], env={**os.environ, VARIABLE: "true"},
                              timeout=60)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"the run with {VARIABLE}=true did not end within 60 s") from None
    if done.returncode != 0:
        raise SystemExit(f"the run with {VARIABLE}=true ended with exit status {done.returncode}")


if __name__ == "__main__":
    main()
