"""The one runner: executes a scenario's variants, measures them, judges them.

Makefile, notebooks and tests all come through `run_scenario()` (or the CLI in
`scenarios/__main__.py`, which is a thin wrapper around it). Each variant runs
as a child process in its own session with a hard time limit; while it runs the
runner samples the memory (USS) of the script's process and of every process
below it (the DataLoader workers); when it ends, for whatever reason, the whole
process tree is killed and reaped, and any `/dev/shm/torch_*` file it left is
removed and reported.

A scenario declares what its variants must show in `scenario.toml`:

    title = "…"                # one line, shown by `list` and `make help`
    needs = ["fork"]            # platform facilities: linux, fork, userns
    limit_s = 60                # hard wall-clock limit per variant

    [variants.broken]           # also: fixed, and any number of myth_* variants
    expect = "error"            # completed | error | hang | signal
    evidence = 'regex'          # must match a line of the output
    metrics = { worker_uss_growth_mb = { min = 100 } }

A script reports a figure by printing a line `metric NAME=VALUE`; the runner
adds figures of its own from the memory samples (`sampled_*`).
"""
from __future__ import annotations

import ctypes
import dataclasses
import multiprocessing
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

import psutil

SCENARIOS_DIR = Path(__file__).resolve().parent
REPO_ROOT = SCENARIOS_DIR.parent
SHM_DIR = Path("/dev/shm")
SAMPLE_EVERY_S = 0.2
OUTPUT_TAIL_LINES = 200
# Helpers torch starts for the file_system sharing strategy: in the tree, but not workers.
NOT_WORKERS = {"torch_shm_manager"}
# A script exits with this status when the platform lacks what it needs
# (the convention of automake and pytest-style harnesses for "skipped").
EXIT_CANNOT_RUN = 77
OUTCOMES = ("completed", "error", "hang", "signal", "cannot-run")
METRIC_LINE = re.compile(r"^metric (\w+)=(-?[0-9.]+(?:e-?\d+)?)\s*$")
# faulthandler.dump_traceback_later() prints this when a script's own watchdog fires.
WATCHDOG_LINE = re.compile(r"^Timeout \(\d+:\d\d:\d\d\)!")
ERROR_LINE = re.compile(r"^(\w+\.)*\w*(Error|Exception|Interrupt|Exit)\b.*")


class ScenarioError(Exception):
    """Bad input: reported as one line, never a traceback."""


class CannotRunHere(ScenarioError):
    """The platform lacks what the scenario needs (fork, Linux, …)."""


@dataclasses.dataclass
class Scenario:
    number: str
    slug: str
    path: Path
    title: str
    needs: list
    limit_s: float
    variants: dict  # name -> declaration (expect, evidence, metrics, limit_s)


def discover() -> dict[str, Scenario]:
    """Every `scenarios/NN_slug/` folder with a scenario.toml, by number."""
    found = {}
    for folder in sorted(SCENARIOS_DIR.glob("[0-9][0-9]_*")):
        declaration = folder / "scenario.toml"
        if not declaration.is_file():
            continue
        spec = tomllib.loads(declaration.read_text())
        number = folder.name[:2]
        found[number] = Scenario(
            number=number,
            slug=folder.name,
            path=folder,
            title=spec["title"],
            needs=spec.get("needs", []),
            limit_s=float(spec.get("limit_s", 60)),
            variants=spec["variants"],
        )
    return found


def get_scenario(number: str) -> Scenario:
    scenarios = discover()
    if not re.fullmatch(r"\d{1,2}", str(number)):
        raise ScenarioError(
            f"'{number}' is not a scenario number; available: {', '.join(scenarios)}"
        )
    key = f"{int(number):02d}"
    if key not in scenarios:
        raise ScenarioError(f"no scenario {key}; available: {', '.join(scenarios)}")
    return scenarios[key]


def user_namespaces_work() -> bool:
    """Can an unprivileged process make its own mount namespace (for a private /dev/shm)?"""
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"],
                           capture_output=True, timeout=10)
    return probe.returncode == 0


def missing_needs(scenario: Scenario) -> str | None:
    """Why this platform cannot run the scenario, or None if it can."""
    for need in scenario.needs:
        if need == "linux" and not sys.platform.startswith("linux"):
            return f"needs Linux (this is {sys.platform}); a Linux VM or container will do"
        if need == "fork" and "fork" not in multiprocessing.get_all_start_methods():
            return (
                f"needs the 'fork' start method, which {sys.platform} does not have; "
                "run it on Linux (a VM or container is fine)"
            )
        if need == "userns" and not user_namespaces_work():
            return ("needs unprivileged user namespaces (`unshare --user --map-root-user "
                    "--mount true` failed); enable kernel.unprivileged_userns_clone, "
                    "or run outside a container that forbids them")
    return None


# ---------------------------------------------------------------- running one variant


def _become_subreaper() -> None:
    # Workers orphaned by a killed script are re-parented to us rather than to
    # PID 1 (which in a container may never reap them), so we can wait for them.
    if sys.platform.startswith("linux"):
        PR_SET_CHILD_SUBREAPER = 36
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _tree(root: psutil.Process) -> list[psutil.Process]:
    try:
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return [root]


def _name(proc: psutil.Process) -> str:
    try:
        return proc.name()
    except psutil.Error:
        return ""


def _uss_mb(proc: psutil.Process) -> tuple[float, float] | None:
    """(USS, RSS) in MB; USS is the memory only this process holds.  None for a
    process that is gone or a zombie (whose /proc memory files read as empty)."""
    try:
        info = proc.memory_full_info()
    except psutil.Error:
        return None
    if info.rss == 0:
        return None
    return getattr(info, "uss", info.rss) / 2**20, info.rss / 2**20


# Jupyter kernels force colour on; a stack stored in a result should be plain text.
_PLAIN_TEXT_ENV = {k: v for k, v in os.environ.items() if k not in ("CLICOLOR_FORCE", "FORCE_COLOR")}
_PLAIN_TEXT_ENV["NO_COLOR"] = "1"


def _where_stuck(procs: list[psutil.Process]) -> str:
    """A stack of each process: py-spy if it works here, the kernel's view otherwise."""
    dumps = []
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    for proc in procs:
        text = ""
        if Path(py_spy).exists():
            try:
                done = subprocess.run(
                    [py_spy, "dump", "--pid", str(proc.pid)],
                    capture_output=True, text=True, timeout=15, env=_PLAIN_TEXT_ENV,
                )
                text = done.stdout.strip() if done.returncode == 0 else ""
            except subprocess.TimeoutExpired:
                pass
        if not text:  # no py-spy, or no ptrace permission: say what the kernel knows
            try:
                wchan = Path(f"/proc/{proc.pid}/wchan").read_text()
                text = f"Process {proc.pid} ({proc.status()}), blocked in kernel at: {wchan}"
            except (OSError, psutil.Error):
                text = f"Process {proc.pid}: no stack available (install py-spy)"
        dumps.append(text)
    return "\n\n".join(dumps)


def _kill_tree(root: psutil.Process, seen: dict[int, psutil.Process]) -> int:
    """SIGKILL the session and everything ever seen in it; return how many outlived that."""
    procs = {p.pid: p for p in [*seen.values(), *_tree(root)]}
    try:
        os.killpg(root.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for proc in procs.values():
        try:
            proc.kill()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(list(procs.values()), timeout=5)
    return len(alive)


def _shm_owner(name: str) -> int | None:
    """The creator's pid in a torch shared-memory file name, torch_<pid>_<random>_<counter>."""
    part = name.split("_")[1] if name.count("_") >= 2 else ""
    return int(part) if part.isdigit() else None


def _torch_shm_files() -> set[str]:
    try:
        return {p.name for p in SHM_DIR.iterdir() if p.name.startswith("torch_")}
    except OSError:
        return set()


class _LiveStatus:
    """One status line, redrawn in place on a terminal, plain lines otherwise."""

    def __init__(self, label: str, stream, enabled: bool):
        self.label, self.stream, self.enabled = label, stream, enabled
        self.tty = enabled and stream.isatty()
        self.last_plain = 0.0
        self.text = ""

    def update(self, elapsed: float, main_mb: float, workers_mb: list[float]) -> None:
        if not self.enabled:
            return
        workers = " ".join(f"{mb:.0f}" for mb in workers_mb) or "-"
        self.text = f"  [{self.label}] {elapsed:5.1f} s   main {main_mb:6.0f} MB   workers {workers} MB"
        if self.tty:
            self.stream.write("\r\033[K" + self.text)
            self.stream.flush()
        elif elapsed - self.last_plain >= 2.0:
            self.last_plain = elapsed
            print(self.text, file=self.stream, flush=True)

    def echo(self, line: str) -> None:
        if not self.enabled:
            return
        if self.tty:
            self.stream.write("\r\033[K")
        print(f"  │ {line}", file=self.stream, flush=True)
        if self.tty and self.text:
            self.stream.write(self.text)
            self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\r\033[K")
            self.stream.flush()


def run_variant(scenario: Scenario, variant: str, show=None) -> dict:
    """Run one variant to its end or its limit and return what was observed."""
    spec = scenario.variants[variant]
    script = scenario.path / spec.get("script", f"{variant}.py")
    limit_s = float(spec.get("limit_s", scenario.limit_s))
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    live = _LiveStatus(f"{scenario.number} {variant}", show or sys.stderr, show is not None)

    _become_subreaper()
    shm_before = _torch_shm_files()
    started = time.monotonic()
    child = subprocess.Popen(
        [sys.executable, str(script)],
        cwd=REPO_ROOT, env=env, start_new_session=True,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, errors="replace",
    )
    root = psutil.Process(child.pid)
    lines: list[str] = []

    def read_output():
        for line in child.stdout:
            lines.append(line.rstrip("\n"))
            live.echo(lines[-1])

    reader = threading.Thread(target=read_output, daemon=True)
    reader.start()

    memory, seen = [], {root.pid: root}
    peak_rss = {"main": 0.0, "workers": 0.0}
    first_uss: dict[int, float] = {}
    peak_uss: dict[int, float] = {}
    timed_out = False
    while child.poll() is None:
        elapsed = time.monotonic() - started
        if elapsed > limit_s:
            timed_out = True
            break
        procs = _tree(root)
        seen.update({p.pid: p for p in procs})
        sample = {"main": None, "workers": [], "pids": []}
        for proc in procs:
            measured = _uss_mb(proc)
            if measured is None:
                continue
            uss, rss = measured
            if proc.pid == root.pid:
                sample["main"] = round(uss, 1)
                peak_rss["main"] = max(peak_rss["main"], rss)
            elif _name(proc) not in NOT_WORKERS:
                sample["workers"].append(round(uss, 1))
                sample["pids"].append(proc.pid)
                peak_rss["workers"] = max(peak_rss["workers"], rss)
                first_uss.setdefault(proc.pid, uss)
                peak_uss[proc.pid] = max(peak_uss.get(proc.pid, 0.0), uss)
        if sample["main"] is not None:  # None: the script is exiting, nothing left to sample
            memory.append([round(elapsed, 2), sample])
            live.update(elapsed, sample["main"], sample["workers"])
        time.sleep(SAMPLE_EVERY_S)

    seconds = time.monotonic() - started
    stacks = _where_stuck(_tree(root)) if timed_out else ""
    survivors = _kill_tree(root, seen)
    child.wait()
    reader.join(timeout=5)
    live.close()
    # PyTorch names its files torch_<creator pid>_…: leave those of processes outside
    # this run, so runs side by side (parallel tests) never take each other's files.
    leaked = sorted(name for name in _torch_shm_files() - shm_before
                    if _shm_owner(name) in (None, *seen))
    for name in leaked:  # clean up, but report it: a leak is a finding
        (SHM_DIR / name).unlink(missing_ok=True)

    output = "\n".join(lines)
    outcome = _classify(child.returncode, timed_out, output)
    metrics = {m.group(1): float(m.group(2)) for m in map(METRIC_LINE.match, lines) if m}
    metrics["seconds"] = round(seconds, 2)
    if peak_uss:
        metrics["sampled_worker_uss_growth_mb"] = round(
            max(peak_uss[pid] - first_uss[pid] for pid in peak_uss), 1)
        metrics["sampled_worker_uss_peak_mb"] = round(max(peak_uss.values()), 1)
        metrics["sampled_worker_rss_peak_mb"] = round(peak_rss["workers"], 1)
    if memory:
        metrics["sampled_main_uss_peak_mb"] = max(s["main"] for _, s in memory)
        metrics["sampled_main_rss_peak_mb"] = round(peak_rss["main"], 1)
    result = {
        "outcome": outcome,
        "exit_code": child.returncode,
        "signal": signal.Signals(-child.returncode).name if (child.returncode or 0) < 0 else None,
        "seconds": round(seconds, 2),
        "limit_s": limit_s,
        "evidence": _evidence(outcome, spec.get("evidence"), lines, timed_out),
        "metrics": metrics,
        "output_tail": "\n".join(lines[-OUTPUT_TAIL_LINES:]),
        "stacks": stacks,
        "memory": memory,
        "leaked_shm_files": leaked,
        "surviving_processes": survivors,
    }
    result["breaches"] = _breaches(spec, result)
    result["as_expected"] = outcome == spec["expect"] and not result["breaches"]
    return result


def _classify(exit_code: int, timed_out: bool, output: str) -> str:
    if timed_out or any(WATCHDOG_LINE.match(line) for line in output.splitlines()):
        return "hang"
    if exit_code == 0:
        return "completed"
    if exit_code == EXIT_CANNOT_RUN:
        return "cannot-run"
    if exit_code < 0:
        return "signal"
    return "error"


def _evidence(outcome: str, pattern: str | None, lines: list[str], timed_out: bool) -> str:
    """The one line a person should read: the declared evidence, else the error line."""
    if pattern:
        for line in lines:
            if re.search(pattern, line):
                return line.strip()
    if timed_out:
        return f"no progress before the time limit; last output: {lines[-1].strip() if lines else '(none)'}"
    if outcome in ("error", "cannot-run"):
        errors = [line for line in lines if ERROR_LINE.match(line.strip())]
        if errors:
            return errors[-1].strip()
    return lines[-1].strip() if lines else ""


def _breaches(spec: dict, result: dict) -> list[str]:
    """Every way the run differs from what the declaration says it must show."""
    found = []
    pattern = spec.get("evidence")
    if pattern and not re.search(pattern, result["evidence"]):
        found.append(f"output lacks /{pattern}/")
    for name, bounds in spec.get("metrics", {}).items():
        value = result["metrics"].get(name)
        if value is None:
            found.append(f"{name} was not measured")
        elif "min" in bounds and value < bounds["min"]:
            found.append(f"{name}={value:g} < {bounds['min']:g}")
        elif "max" in bounds and value > bounds["max"]:
            found.append(f"{name}={value:g} > {bounds['max']:g}")
    return found


# ---------------------------------------------------------------- a whole scenario


def run_scenario(number: str, variants=("broken", "fixed"), show=None) -> dict:
    """Run the named variants ("all" for every declared one) and judge them.

    `show`: a stream for the live status line and the scripts' output, or None.
    """
    scenario = get_scenario(number)
    why_not = missing_needs(scenario)
    if why_not:
        raise CannotRunHere(f"scenario {scenario.number} cannot run here: {why_not}")
    names = list(scenario.variants) if variants == "all" or variants == ["all"] else list(variants)
    unknown = [v for v in names if v not in scenario.variants]
    if unknown:
        raise ScenarioError(
            f"scenario {scenario.number} has no variant {', '.join(unknown)}; "
            f"available: {', '.join(scenario.variants)}"
        )
    results = {}
    for name in names:
        if show:
            print(f"\n▶ {scenario.slug}/{name}.py  (limit {scenario.variants[name].get('limit_s', scenario.limit_s):g} s)", file=show, flush=True)
        results[name] = run_variant(scenario, name, show)
    report = {
        "scenario": scenario.number,
        "slug": scenario.slug,
        "title": scenario.title,
        "python": sys.version.split()[0],
        "torch": _torch_version(),
        "reproduced": results["broken"]["as_expected"] if "broken" in results else None,
        "fixed": results["fixed"]["as_expected"] if "fixed" in results else None,
        "variants": results,
    }
    report["cannot_run"] = any(r["outcome"] == "cannot-run" for r in results.values())
    return report


def _torch_version() -> str | None:
    try:
        from importlib.metadata import version
        return version("torch")
    except Exception:
        return None


def verdict(report: dict) -> str:
    """The short text a person reads at a glance."""
    rows = [f"Scenario {report['scenario']} · {report['title']}"
            f"   (torch {report['torch']}, Python {report['python']})"]
    for name, run in report["variants"].items():
        if name == "broken":
            mark = "✔ reproduced" if run["as_expected"] else "✘ did NOT reproduce"
        elif name == "fixed":
            mark = "✔ fixed" if run["as_expected"] else "✘ NOT fixed"
        else:
            mark = "✔ as measured before" if run["as_expected"] else "✘ differs from the README"
        rows.append(f"  {name:<18} {run['outcome']:<10} {run['seconds']:6.1f} s   {mark}")
        if run["evidence"]:
            rows.append(f"      evidence: {run['evidence'][:160]}")
        figures = {k: v for k, v in run["metrics"].items() if k != "seconds"}
        if figures:
            rows.append("      figures:  " + ", ".join(f"{k}={v:g}" for k, v in figures.items()))
        for breach in run["breaches"]:
            rows.append(f"      expected otherwise: {breach}")
        if run["stacks"]:
            rows.append("      where it is stuck:")
            rows.extend("        " + line for line in run["stacks"].splitlines())
        if run["leaked_shm_files"]:
            rows.append(f"      removed leftover /dev/shm files: {', '.join(run['leaked_shm_files'])}")
        if run["surviving_processes"]:
            rows.append(f"      WARNING: {run['surviving_processes']} process(es) outlived SIGKILL")
    return "\n".join(rows)
