"""Not for people to run: the runner starts every scenario script through this.

    python -m scenarios.clinic.run.reaper STATUS_FILE python script.py

It makes itself a child subreaper, so that workers orphaned when the runner kills
a script are re-parented here instead of to PID 1 (which in a container may never
reap them).  It starts the script in a session of its own (the runner kills that
session, never this process), writes the script's exit status to STATUS_FILE the
moment it ends (negative: killed by that signal), then waits for every orphan to
be gone.  The runner's own process (pytest, a Jupyter kernel) is left unchanged.
"""
import os
import subprocess
import sys

from scenarios.host import become_subreaper


def main() -> None:
    status_file, command = sys.argv[1], sys.argv[2:]
    become_subreaper()
    script = subprocess.Popen(command, start_new_session=True)
    status = script.wait()
    with open(status_file + ".part", "w") as out:
        out.write(str(status))
    os.replace(status_file + ".part", status_file)
    while True:  # reap what the runner kills; return once nothing is left
        try:
            os.wait()
        except ChildProcessError:
            break


if __name__ == "__main__":
    main()
