"""Shared by the tests: run a scenario through the real command line, as `make` does.

Two tiers, chosen by the `full` marker (pyproject.toml): `make test` (plain `pytest`) deselects the
tests marked `full` and runs every scenario's broken and fixed variants once, with what the tools
promise shown once per kind of evidence; `make test-full` (pytest --full, what CI runs) runs every
test: the corpora, every graded attempt, every probe, the myth_* and measure_* variants, and the
walkthroughs executed.  Each test's tier is written to the junit file (`make suite-report`).
Each variant runs once per test session: the runner keeps every result it produces
in RESULTS_DIR (see scenarios/clinic/run/runner.py, `CLINIC_RESULTS_DIR`), and the scenario tests,
the parametrized declaration test and the notebooks all read the same runs.
"""
import functools
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from leftovers import end_leftovers, mark_session

from scenarios.clinic.run.runner import OBSERVE_FIXED_ENV, RESULTS_ENV
from scenarios.synthetic_data import GRADING_SEED

REPO_ROOT = Path(__file__).resolve().parents[1]
FULL_ENV = "CLINIC_TEST_FULL"  # `make test-full`: the myth_*, measure_* variants and the executed walkthroughs too
LESSON = ("broken", "fixed")  # each scenario's two variants make test runs; make test-full runs every one


def pytest_addoption(parser):
    parser.addoption("--full", action="store_true",
                     help="also run every myth_* and measure_* variant and execute the walkthroughs "
                          "(make test-full)")


def pytest_configure(config):
    if config.getoption("--full"):  # in each xdist worker too: the option reaches them all
        os.environ[FULL_ENV] = "1"
    elif not config.option.markexpr:  # `-m` given by hand chooses for itself
        config.option.markexpr = "not full"
    config._clinic_suite_mark = mark_session(controller=not hasattr(config, "workerinput"))
    config._clinic_semaphores_before = _unmapped_semaphores()
    # Set before any runner starts, so that notebook kernels inherit it too.
    if not os.environ.get(RESULTS_ENV):
        os.environ[RESULTS_ENV] = tempfile.mkdtemp(prefix="clinic-results-")
        config._clinic_results_dir = os.environ[RESULTS_ENV]
    # Each exercise's fixed.py runs once, as the grader runs an attempt (hook included): its
    # declaration's tests and the grader's test of fixed.py as an attempt read that one run.
    os.environ.setdefault(OBSERVE_FIXED_ENV, "1")
    # The scenarios' data at its documented places, whatever seed a shell left set; the grader
    # sets its own for the attempts it runs (scenarios/synthetic_data.py).
    os.environ.pop(GRADING_SEED, None)


@pytest.hookimpl(tryfirst=True)  # before xdist turns the marks into groups
def pytest_collection_modifyitems(config, items):
    # `make test` runs four pytest workers (make test-full two) (pytest-xdist, --dist loadgroup): every test of one
    # scenario goes to the same worker, which runs its variants once, a graded attempt of its
    # exercise too (shortcut_03_…, corpus/10_…: one file's attempts in one group were a long tail
    # at the suite's end); other tests by file.
    # test_doctor_loader.py asserts that /dev/shm holds no new file after its probes: it shares a
    # worker with scenario 08, whose myth check leaves files there for seconds on purpose.
    for item in items:
        number = re.search(r"test_scenario_(\d\d)|\[(?:corpus/|shortcut_|partial_)?(\d\d)", item.nodeid)
        group = next(g for g in number.groups() if g) if number else item.path.name
        item.add_marker(pytest.mark.xdist_group("08" if group == "test_doctor_loader.py" else group))
        item.user_properties.append(("tier", "full" if item.get_closest_marker("full") else "test"))


def _unmapped_semaphores() -> set[str]:
    """multiprocessing's semaphores in /dev/shm that no process maps (left by a SIGKILLed resource tracker),
    and glibc's temporaries of semaphores a SIGKILL cut short in the making."""
    from scenarios.clinic.run.shm_leaks import GLIBC_TEMPORARY, SHM, semaphore_inodes
    found = {}
    for path in SHM.glob("sem.*") if SHM.is_dir() else ():
        if not (path.name.startswith("sem.mp-") or GLIBC_TEMPORARY.fullmatch(path.name)):
            continue
        try:
            found[path.name] = path.stat().st_ino
        except OSError:  # removed meanwhile
            continue
    mapped = semaphore_inodes() if found else set()
    return {name for name, inode in found.items() if inode not in mapped}


@pytest.hookimpl(trylast=True)  # after xdist has ended its workers
def pytest_sessionfinish(session, exitstatus):
    if not hasattr(session.config, "workerinput"):
        left = end_leftovers(session.config._clinic_suite_mark)
        if left:
            print(f"\nerror: {len(left)} process(es) the suite started outlived it, now killed:\n  "
                  + "\n  ".join(left), file=sys.stderr)
            session.exitstatus = 1
    _semaphores_left(session)


def _semaphores_left(session):
    # A run's own leaks are its result's leaked_shm_files; this catches a semaphore leaked by a
    # process that died before its run ended, which no single run can attribute.  xdist workers
    # skip it: the controller checks once, after all of them.  A glibc temporary (a creation the
    # suite's own SIGKILLs cut short at an unlucky microsecond) is removed and named, as the runs
    # do, without failing the suite: no test's defect leaves one.
    if hasattr(session.config, "workerinput") or not hasattr(session.config, "_clinic_semaphores_before"):
        return
    from scenarios.clinic.run.shm_leaks import SHM
    time.sleep(1)  # a resource tracker still removing the last run's semaphores
    leaked = sorted(_unmapped_semaphores() - session.config._clinic_semaphores_before)
    for name in leaked:
        (SHM / name).unlink(missing_ok=True)
    named = [name for name in leaked if name.startswith("sem.mp-")]
    if leaked:
        print(f"\n{'error' if named else 'note'}: the suite left {len(leaked)} semaphore(s) in /dev/shm that no "
              f"process maps: {', '.join(leaked[:5])}; removed", file=sys.stderr)
    if named:
        session.exitstatus = 1


def pytest_unconfigure(config):
    made = getattr(config, "_clinic_results_dir", None)
    if made:
        shutil.rmtree(made, ignore_errors=True)
        os.environ.pop(RESULTS_ENV, None)


def load_scenario_module(folder: str, name: str):
    """Import scenarios/<folder>/<name>.py (folders start with digits, so not as a package),
    with the folder on sys.path for its sibling imports, under a name unique to the folder."""
    path = REPO_ROOT / "scenarios" / folder
    sys.path.insert(0, str(path))
    try:
        spec = importlib.util.spec_from_file_location(f"scenario{folder[:2]}_{name}", path / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(path))


def run_scenario_json(number: str, *variants: str, fresh: bool = False) -> dict:
    """`python -m scenarios run NN --json --variant …`, parsed; skips where it cannot run.
    `fresh=True` runs the variants again instead of reusing this session's results."""
    env = dict(os.environ)
    if fresh:
        env.pop(RESULTS_ENV, None)
    done = subprocess.run(
        [sys.executable, "-m", "scenarios", "run", number, "--json", "--variant", *variants],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=900, env=env,
    )
    if done.returncode == 3:
        pytest.skip(done.stderr.strip())
    assert done.returncode in (0, 1), f"runner failed (exit {done.returncode}):\n{done.stderr}"
    return json.loads(done.stdout)


def full() -> bool:
    return bool(os.environ.get(FULL_ENV))


def _session_variants(number: str) -> tuple[str, ...]:
    """Every declared variant in `make test-full`; in `make test`, broken and fixed, the lesson: the
    other forms of the fault and of its fix (broken_forkserver, fixed_main_guard), the myths and the
    measurements run in make test-full and `make figures`."""
    return ("all",) if full() else LESSON


class _Variants(dict):
    def __missing__(self, name):
        if name not in LESSON and not full():
            pytest.skip(f"{name} runs with `make test-full` (and `make figures`); `make test` runs broken and fixed")
        raise KeyError(name)


@functools.cache
def _all_variants(number: str) -> str:
    return json.dumps(run_scenario_json(number, *_session_variants(number)))


def scenario_report(number: str) -> dict:
    """The variants of scenario NN this session runs (_session_variants), each run once per session
    (a fresh copy each call); asking for a myth_* or measure_* one that did not run skips the test."""
    report = json.loads(_all_variants(number))
    report["variants"] = _Variants(report["variants"])
    return report


def exit_code_of_child_forked_holding(lock, action, limit_s: float = 30.0) -> int | None:
    """Fork while this process holds `lock`; the child calls `action()` and exits.  The
    child's exit code, or None if it was still waiting after `limit_s` (it is then killed)."""
    with lock:
        pid = os.fork()
        if pid == 0:
            try:
                action()
            finally:
                os._exit(0)
    deadline = time.monotonic() + limit_s
    while (done := os.waitpid(pid, os.WNOHANG)) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.02)
    return os.waitstatus_to_exitcode(done[1])



def examined(pid: int, enough, only=None) -> list:
    """`doctor --pid` on a job that stays hung, looked at a second time where the first look was not `enough`
    (a loaded machine kept py-spy from the stacks) or a process ended while it was read."""
    import psutil
    from scenarios.clinic.doctor.engine import examine_running

    findings = []
    for _ in range(2):
        try:
            findings = examine_running(pid, 3.0, only=only)
        except psutil.NoSuchProcess:
            continue
        if enough(findings):
            break
    return findings
