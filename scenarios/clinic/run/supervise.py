"""Process supervision: run one script under a hard limit, then kill and reap everything it started.

The script runs below `scenarios/clinic/run/reaper.py`, a small process that adopts the
script's orphans and reaps them, so the caller (the command line, pytest, a
Jupyter kernel) is never changed.  `Supervised` gives the caller the script's
process, the processes below it, its output lines and, once it is over, its
exit status; on a hang `where_stuck()` shows each process's stack.
"""
from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from scenarios.clinic import REPO_ROOT
from scenarios.clinic.paths import RUN_FOLDER_PREFIX, readable_paths
from scenarios.clinic.run.shm_leaks import semaphore_inodes
from scenarios.host import py_spy_path
from scenarios.instruments import helper_kind

# Jupyter kernels force colour on; a stack stored in a result should be plain text.
_PLAIN_TEXT_ENV = {k: v for k, v in os.environ.items() if k not in ("CLICOLOR_FORCE", "FORCE_COLOR")}
_PLAIN_TEXT_ENV["NO_COLOR"] = "1"


class Supervised:
    """One script, started at once; call `finish()` (always) to kill and reap what is left.
    `script`: a Python file, or a whole command as a list (`doctor -- COMMAND`: the user's own run,
    from `cwd`).  `importable`: folders the script may import from besides the repository (a workshop
    attempt kept elsewhere imports its scenario's helper modules); `env`: variables to set."""

    def __init__(self, script: Path | list[str], on_line=None, importable: tuple[Path, ...] = (),
                 observe: bool = False, env: dict[str, str] | None = None, cwd: str | Path = REPO_ROOT):
        self.semaphores: set[int] = set()
        # Every run gets a temporary folder of its own as TMPDIR, removed when the run is over:
        # multiprocessing leaves a pymp-* folder behind for each process killed before its exit
        # handlers ran, and the runner kills on purpose.
        self._folder = tempfile.mkdtemp(prefix=RUN_FOLDER_PREFIX)
        env = dict(os.environ, **(env or {}), PYTHONUNBUFFERED="1", TMPDIR=self._folder)
        # `observe` (a workshop attempt): every interpreter of the run first runs a sitecustomize.py
        # of the run's own, which records what its DataLoaders do (observe.py) in `observed`.
        self.observed: str | None = None
        self.observations: dict | None = None
        hook = []
        if observe:
            hook = [os.path.join(self._folder, ".clinic-hook")]
            self.observed = os.path.join(self._folder, ".clinic-hook", "observed.jsonl")
            os.mkdir(hook[0])
            with open(os.path.join(hook[0], "sitecustomize.py"), "w") as site:
                site.write("from scenarios.clinic.run.observe import install\n"
                           f"install({self.observed!r})\n")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [*hook, *map(str, importable), str(REPO_ROOT),
                                                          env.get("PYTHONPATH")]))
        self._status_file = os.path.join(self._folder, ".clinic-exit-status")
        self._cpu_before = _cpu_of_waited_children()
        self.cpu_s: float | None = None
        self.reaper = subprocess.Popen(
            [sys.executable, "-m", "scenarios.clinic.run.reaper", self._status_file,
             *(script if isinstance(script, list) else [sys.executable, str(script)])],
            cwd=cwd, env=env, start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, errors="replace",
        )
        self.lines: list[str] = []
        self.seen: dict[int, psutil.Process] = {}
        self.helpers: set[int] = set()  # pids among `seen` that are not workers
        self._script: psutil.Process | None = None
        self._final_status: int | None = None
        self._reader = threading.Thread(target=self._read, args=(on_line,), daemon=True)
        self._reader.start()

    def _read(self, on_line) -> None:
        for line in self.reaper.stdout:
            self.lines.append(readable_paths(line.rstrip("\n")))
            if on_line:
                on_line(self.lines[-1])

    def script(self) -> psutil.Process | None:
        """The script's own process (the reaper's first child), once it has started."""
        if self._script is None:
            try:
                children = psutil.Process(self.reaper.pid).children()
            except psutil.Error:
                children = []
            if children:
                self._script = children[0]
                self.seen[self._script.pid] = self._script
        return self._script

    def processes(self) -> list[psutil.Process]:
        """The script and every process below it, including orphans the reaper adopted."""
        try:
            procs = psutil.Process(self.reaper.pid).children(recursive=True)
        except psutil.Error:
            procs = []
        for proc in procs:
            if proc.pid not in self.seen:
                self.seen[proc.pid] = proc
                self._note_helper(proc.pid)
        return procs

    def wait_noting_processes(self, seconds: float) -> None:
        """Wait `seconds`, adding every process that appears below the reaper meanwhile to
        `seen`: an epoch of a few batches can start and end its workers between two memory
        samples, and the count of workers (what grading trusts instead of the script's word)
        must not miss them.  Linux's /proc/PID/task/TID/children costs a few small reads per
        poll, where a scan of every process would cost milliseconds; elsewhere the memory
        samples alone count."""
        deadline = time.monotonic() + seconds
        while _PROC_CHILDREN and self.exit_status() is None and time.monotonic() < deadline:
            for pid in _below(self.reaper.pid) - self.seen.keys():
                try:
                    self.seen[pid] = psutil.Process(pid)
                except psutil.Error:
                    continue
                self._note_helper(pid)
            time.sleep(PROCESS_POLL_S)
        time.sleep(max(0.0, deadline - time.monotonic()))

    def _note_helper(self, pid: int) -> None:
        # Read while the process lives: once it is gone, /proc no longer says what it was.
        if helper_kind(pid):
            self.helpers.add(pid)

    def workers_seen(self, recorded: set | frozenset = frozenset()) -> int:
        """How many processes ran below the script, torch's and multiprocessing's helper
        processes (shared-memory manager, fork server, resource tracker) aside; with `recorded`, the
        DataLoader workers the run's own hook wrote a record from, which a poll on a loaded machine
        can miss when they live for a moment (36's fixed run: 23 seen of its 24, beside a busy core)."""
        # The script is the reaper's first child: the lowest pid seen, where it ended too soon to be named.
        script = getattr(self.script(), "pid", None) or min(self.seen, default=None)
        return len({pid for pid in self.seen if pid != script and pid not in self.helpers} | set(recorded))

    def exit_status(self) -> int | None:
        """The script's exit status (negative: killed by that signal), None while it runs."""
        if self._final_status is not None:
            return self._final_status
        try:
            return int(Path(self._status_file).read_text())
        except (OSError, ValueError):
            return None if self.reaper.poll() is None else self.reaper.returncode

    def interrupt(self, grace_s: float) -> bool:
        """Ctrl-C as a terminal sends it, to the script's whole process group, then up to `grace_s`
        for the script to end by itself (its own handlers, its `finally:` blocks); True if it did."""
        script = self.script()
        if script is not None and self.exit_status() is None:
            try:
                os.killpg(script.pid, signal.SIGINT)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + grace_s
        while self.exit_status() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        return self.exit_status() is not None

    def where_stuck(self) -> str:
        """A stack of each process: py-spy where it works, the kernel's view otherwise."""
        return "\n\n".join(readable_paths(stack_of(proc.pid)) for proc in self.processes())

    def finish(self) -> int:
        """SIGKILL the script's session and everything ever seen below it, let the reaper reap
        them, and return how many processes outlived that."""
        procs = {p.pid: p for p in [*self.seen.values(), *self.processes()]}
        self.semaphores = semaphore_inodes(procs)  # this run's, for remove_leaked_shm
        # multiprocessing's resource tracker goes last, and on its own if it can: once the
        # others are gone it removes their semaphores from /dev/shm (SIGKILLed, it leaks them).
        trackers = [p for p in procs.values() if helper_kind(p.pid) == "multiprocessing.resource_tracker"]
        for proc in [p for p in procs.values() if p not in trackers]:
            try:
                proc.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(trackers, timeout=3)
        script = self.script()
        if script is not None:
            try:
                os.killpg(script.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for proc in procs.values():
            try:
                proc.kill()
            except psutil.Error:
                pass
        try:
            self.reaper.wait(timeout=10)
        except subprocess.TimeoutExpired:  # something escaped even the reaper's session: give up on it
            self.reaper.kill()
            self.reaper.wait()
        self._reader.join(timeout=5)
        _, alive = psutil.wait_procs(list(procs.values()), timeout=5)
        self._final_status = self.exit_status()
        self.cpu_s = round(_cpu_of_waited_children() - self._cpu_before, 2)
        if self.observed:
            from scenarios.clinic.run.observe import summary
            self.observations = summary(self.observed)
        shutil.rmtree(self._folder, ignore_errors=True)
        return len(alive)


PROCESS_POLL_S = 0.02
_PROC_CHILDREN = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists()


def _below(root: int) -> set[int]:
    """Every process below `root`, from the kernel's list of each thread's children."""
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                children = Path(f"/proc/{pid}/task/{tid}/children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                if child not in found:
                    found.add(child)
                    todo.append(child)
    return found


def _cpu_of_waited_children() -> float:
    """User + system CPU seconds of this process's children that have been waited for, each
    counting the descendants it waited for in turn: the reaper waits for the script and every
    orphan, so once it is reaped, its whole run is in here."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def stack_of(pid: int, nonblocking: bool = False, timeout_s: float = 15.0) -> str:
    """The Python stacks of one process (py-spy dump); where py-spy cannot read it, the kernel's
    view (state and wait channel) and how to get the stacks.  `nonblocking`: py-spy reads
    without pausing the process (a job running now is left exactly as it was)."""
    py_spy = py_spy_path()
    text, why_not = "", "py-spy is not installed (`pip install py-spy`)"
    if py_spy:
        try:
            done = subprocess.run([py_spy, "dump", "--pid", str(pid), *(["--nonblocking"] if nonblocking else [])],
                                  capture_output=True, text=True, timeout=timeout_s, env=_PLAIN_TEXT_ENV)
            text = done.stdout.strip() if done.returncode == 0 else ""
            why_not = ("py-spy may not read this process (ptrace refused: run as the same user or as root, set "
                       "kernel.yama.ptrace_scope=0, or add --cap-add SYS_PTRACE in Docker)")
        except subprocess.TimeoutExpired:
            why_not = f"py-spy did not answer within {timeout_s:g} s"
    if text:
        return text
    try:
        state = psutil.Process(pid).status()
        wchan = Path(f"/proc/{pid}/wchan").read_text()
        return f"Process {pid} ({state}), blocked in kernel at: {wchan}; {why_not}"
    except (OSError, psutil.Error):
        return f"Process {pid}: no stack available; {why_not}"
