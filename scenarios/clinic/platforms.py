"""Which scenarios run where: WORKSHOP.md's one table of systems, derived from each scenario.toml's
`needs` (scenarios/clinic/run/declarations.py says what each need is; `missing_needs` asks this
machine).  tables.py renders it into the `runs-where` block; no sentence elsewhere repeats its counts.

A cell is "no" where a need cannot be met on that system at all, else "yes" with a footnote for each
need that holds only with a setting (a sysctl, a container flag, a GPU driver).
"""
from __future__ import annotations

SYSTEMS = ("Linux", "WSL 2", "macOS (native)", "Windows (native)", "a Linux container (Docker/Podman on macOS/Windows)")
YES, NO = "yes", "no"

# need -> a verdict per system, in SYSTEMS' order; a digit is the footnote of a condition.
ON = {
    # WSL 2 runs a real Linux kernel; a container shares its host's Linux (Docker Desktop's VM on
    # macOS and Windows).  Native macOS and Windows are not Linux.
    "linux": (YES, YES, NO, NO, YES),
    # fork exists on macOS (not its default since Python 3.8); Windows has no fork at all.
    "fork": (YES, YES, YES, NO, YES),
    # 04 makes its own small /dev/shm in a user and mount namespace (`unshare`).
    "userns": ("1", "1", NO, NO, "2"),
    # 19 creates a memory cgroup and limits it.
    "memory_cgroup": ("3", "3", NO, NO, "4"),
    # CUDA: none on macOS; Windows has it, but every CUDA scenario also needs Linux.
    "cuda": ("5", "5", NO, "5", "5"),
}
FOOTNOTES = {
    "1": "where unprivileged user namespaces are on: some kernels and distributions turn them off "
         "(`sysctl kernel.unprivileged_userns_clone`, `user.max_user_namespaces`; Ubuntu 24.04's "
         "`kernel.apparmor_restrict_unprivileged_userns`).",
    "2": "with `--security-opt seccomp=unconfined --security-opt apparmor=unconfined` (Docker's default "
         "profiles refuse `unshare`), and user namespaces on in the host's kernel (1).",
    "3": "where this user may create a memory cgroup: cgroup v1, or a cgroup v2 subtree delegated to it "
         "(a systemd user session gives one).",
    "4": "with `--privileged`, or on a host that delegates a cgroup v2 subtree to the container.",
    "5": "with an NVIDIA GPU, its driver (on WSL 2: the Windows driver with WSL support; in a container: "
         "the NVIDIA Container Toolkit and `--gpus all`, so not on macOS, which has no NVIDIA GPU) and a CUDA "
         "build of torch (`make setup TORCH_INDEX=…`, README.md).",
}
NOTES = ("In any container, give it `--shm-size=1g`: Docker's default /dev/shm of 64 MB is less than 10's broken "
         "run fills (README.md's Workshop guide has the whole `docker run` command). On macOS and Windows a "
         "container runs in the Linux VM of Docker Desktop or Podman Machine.",
         "The cells are derived from the declarations: no scenario has been run on macOS or Windows by us. "
         "Windows has no `make`: run `python -m scenarios run NN` there. `make doctor` on a machine says "
         "which scenarios it can run, and why not the others.")


def cell(needs: list, system: int) -> str:
    verdicts = [ON[need][system] if need in ON else "?" for need in needs]
    if NO in verdicts:
        return NO
    conditions = sorted({v for v in verdicts if v not in (YES, "?")})
    unknown = " (a need this table does not know)" if "?" in verdicts else ""
    return YES + "".join(f" ({c})" for c in conditions) + unknown


def numbers_as_ranges(numbers: list[str]) -> str:
    """["01", "02", "03", "05"] -> "01–03, 05": a row of thirty scenarios stays one line."""
    runs: list[list[int]] = []
    for n in sorted(int(n) for n in numbers):
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"{r[0]:02d}–{r[-1]:02d}" if len(r) > 2 else ", ".join(f"{n:02d}" for n in r) for r in runs)


def runs_where_table(scenarios: dict, need_words: dict, source: str) -> str:
    """A row per distinct `needs`, in the order of its first scenario; a column per system."""
    groups: dict[tuple, list[str]] = {}
    for number, scenario in scenarios.items():
        groups.setdefault(tuple(scenario.needs), []).append(number)
    lines = [source, "| scenarios | needs | " + " | ".join(SYSTEMS) + " |", "|---" * (2 + len(SYSTEMS)) + "|"]
    for needs, numbers in groups.items():
        words = " + ".join(need_words.get(need, need) for need in needs) or "nothing"
        cells = " | ".join(cell(list(needs), system) for system in range(len(SYSTEMS)))
        lines.append(f"| {numbers_as_ranges(numbers)} | {words} | {cells} |")
    used = sorted({c for needs in groups for need in needs for c in ON.get(need, ()) if c in FOOTNOTES})
    paragraphs = ["\n".join(lines), *(f"({key}) {FOOTNOTES[key]}" for key in used), *NOTES]
    return "\n\n".join(paragraphs)
