"""Give this script the /dev/shm of a container: a small tmpfs, in a private mount namespace.

`run_in_small_shm(16)` re-executes the running script under
`unshare --user --map-root-user --mount`, which needs no root: the user
namespace makes us root over a mount namespace of our own, where a 16 MiB
tmpfs is mounted on /dev/shm, seen by this process and its workers only and
gone when they exit.  Where user namespaces are off, it says why and exits 77.
"""
import os
import shutil
import subprocess
import sys

EXIT_CANNOT_RUN = 77
INSIDE = "DATALOADER_CLINIC_SHM_MB"
MOUNT_THEN_EXEC = ('mount -t tmpfs -o size="$1" tmpfs /dev/shm '
                   '|| { echo "cannot run here: mounting a tmpfs on /dev/shm failed" >&2; exit 77; }; '
                   'shift; exec "$@"')


def cannot_run(why: str) -> None:
    print(f"cannot run here: {why}", file=sys.stderr, flush=True)
    sys.exit(EXIT_CANNOT_RUN)


def run_in_small_shm(size_mb: int) -> None:
    """Return at once inside the namespace; otherwise become the same script inside it."""
    if os.environ.get(INSIDE) == str(size_mb):
        return
    if not sys.platform.startswith("linux"):
        cannot_run(f"needs Linux mount namespaces to make a small /dev/shm (this is {sys.platform}); "
                   f"try a Linux container started with --shm-size={size_mb}m")
    unshare = shutil.which("unshare")
    if unshare is None:
        cannot_run("needs `unshare` from util-linux to make a private /dev/shm")
    namespace = [unshare, "--user", "--map-root-user", "--mount"]
    probe = subprocess.run([*namespace, "true"], capture_output=True, text=True, timeout=10)
    if probe.returncode != 0:
        cannot_run(f"unprivileged user namespaces are not available ({probe.stderr.strip()}); "
                   "enable them (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces>0) "
                   f"or run inside a container started with --shm-size={size_mb}m")
    sys.stdout.flush()
    os.environ[INSIDE] = str(size_mb)
    os.execv(unshare, [*namespace, "sh", "-c", MOUNT_THEN_EXEC, "sh", f"{size_mb}m",
                       sys.executable, *sys.argv])
