"""Give a script the /dev/shm of a container: a small tmpfs, in a private mount namespace.
Imported by broken.py and fixed.py (and through them by every script of scenario 04).

`run_in_small_shm(16)` re-executes the running script under
`unshare --user --map-root-user --mount`, which needs no root: the user namespace makes
us root over a mount namespace of our own, where a 16 MiB tmpfs is mounted on /dev/shm,
seen by this process and its workers only and gone when they exit.  Where that is not
possible, it says why and exits with scenarios.host.EXIT_CANNOT_RUN.
"""
import os
import sys

from scenarios.host import EXIT_CANNOT_RUN, USERNS_COMMAND, cannot_run, user_namespaces_problem

INSIDE = "DATALOADER_CLINIC_SHM_MB"
MOUNT_THEN_EXEC = ('mount -t tmpfs -o size="$1" tmpfs /dev/shm '
                   '|| { echo "cannot run here: mounting a tmpfs on /dev/shm failed" >&2; '
                   f'exit {EXIT_CANNOT_RUN}; }}; shift; exec "$@"')


def run_in_small_shm(size_mb: int) -> None:
    """Return at once inside the namespace; otherwise become the same script inside it."""
    if os.environ.get(INSIDE) == str(size_mb):
        return
    problem = user_namespaces_problem()
    if problem:
        cannot_run(f"{problem} (to give this script a private {size_mb} MiB /dev/shm)")
    sys.stdout.flush()
    os.environ[INSIDE] = str(size_mb)
    os.execvp(USERNS_COMMAND[0], [*USERNS_COMMAND, "sh", "-c", MOUNT_THEN_EXEC, "sh", f"{size_mb}m",
                                  sys.executable, *sys.argv])
