"""The runner: limits, process-tree cleanup, outcome classification, bad input."""
import ctypes
import json
import os
import signal
import subprocess
import sys
import sysconfig
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

from conftest import REPO_ROOT
from scenarios import host
from scenarios.clinic.run import declarations, report, runner, shm_leaks, supervise
from scenarios.clinic.run.judge import Breach
from scenarios.clinic.run.commands import combine as _combine


def make_scenario(tmp_path, script: str, limit_s=20, **declaration) -> declarations.Scenario:
    (tmp_path / "broken.py").write_text(textwrap.dedent(script))
    variant = {"expect": "completed", **declaration}
    return declarations.Scenario(number="00", slug="00_test", path=tmp_path, title="test",
                                 needs=[], limit_s=limit_s, variants={"broken": variant})


def run(tmp_path, script, **kwargs) -> dict:
    return runner.run_variant(make_scenario(tmp_path, script, **kwargs), "broken")


def test_limit_kills_the_whole_tree_and_shows_where_it_hangs(tmp_path):
    result = run(tmp_path, """
        import os, time
        pids = [os.fork() for _ in range(2)]   # four processes in all
        if 0 not in pids:
            print("parent", os.getpid(), flush=True)
        time.sleep(600)
    """, limit_s=3, expect="hang")
    assert result["outcome"] == "hang" and result["as_expected"]
    assert 3 <= result["seconds"] < 30
    assert result["stacks"].count("Process ") >= 4
    assert "broken.py:6" in result["stacks"]  # the line that sleeps
    pids = {pid for _, sample in result["memory"] for pid in sample["pids"]}
    assert len(pids) == 3
    assert not [pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"]
    assert result["surviving_processes"] == 0


def test_a_grandchild_in_its_own_session_is_killed_too(tmp_path):
    pid_file = tmp_path / "escapee.pid"
    result = run(tmp_path, f"""
        import os, signal, subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c",
            "import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"],
            start_new_session=True)
        open({str(pid_file)!r}, "w").write(str(child.pid))
        time.sleep(600)
    """, limit_s=3, expect="hang")
    escapee = int(pid_file.read_text())
    assert result["outcome"] == "hang"
    assert not psutil.pid_exists(escapee) or psutil.Process(escapee).status() == "zombie"


def test_python_error_is_classified_with_its_message(tmp_path):
    result = run(tmp_path, "raise ValueError('Caught a bad sample in worker 0')", expect="error")
    assert result["outcome"] == "error" and result["exit_code"] == 1
    assert result["evidence"] == "ValueError: Caught a bad sample in worker 0"


def test_death_by_signal_is_named(tmp_path):
    result = run(tmp_path, "import os; os.abort()", expect="signal")
    assert result["outcome"] == "signal" and result["signal"] == "SIGABRT"


def test_script_watchdog_counts_as_hang(tmp_path):
    result = run(tmp_path, """
        import faulthandler, threading
        faulthandler.dump_traceback_later(1, exit=True)
        threading.Event().wait()
    """, expect="hang")
    assert result["outcome"] == "hang" and result["seconds"] < 15


def test_cannot_run_exits_3_and_says_why(tmp_path):
    result = run(tmp_path, "from scenarios.host import cannot_run; cannot_run('no user namespaces here')")
    assert result["exit_code"] == host.EXIT_CANNOT_RUN == 3
    assert result["outcome"] == "cannot-run"
    assert result["evidence"] == "cannot run here: no user namespaces here"
    assert not result["as_expected"]


def test_metrics_are_parsed_and_judged_against_bounds(tmp_path):
    result = run(tmp_path, "print('metric worker_uss_growth_mb=161.5'); print('metric count=3')",
                 metrics={"worker_uss_growth_mb": {"max": 50}, "count": {"min": 3}, "absent": {"min": 1}})
    assert result["metrics"]["worker_uss_growth_mb"] == 161.5 and result["metrics"]["count"] == 3
    assert result["breaches"] == [{"kind": "above", "metric": "worker_uss_growth_mb", "value": 161.5, "bound": 50},
                                  {"kind": "unmeasured", "metric": "absent", "value": None, "bound": None}]
    assert not result["as_expected"]


def test_a_breach_is_a_record_read_by_field_and_said_at_the_edge():
    from scenarios.clinic.run.judge import Differs, breaches

    spec = {"expect": "completed", "evidence": "done", "metrics": {"grew_mb": {"max": 50}, "count": {"min": 3}}}
    found = breaches(spec, {"outcome": "error", "evidence": "Boom", "metrics": {"grew_mb": 161.5}})
    assert found == [Breach(Differs.OUTCOME, value="error", bound="completed"), Breach(Differs.EVIDENCE, bound="done"),
                     Breach(Differs.ABOVE, "grew_mb", 161.5, 50), Breach(Differs.UNMEASURED, "count")]
    assert [str(b) for b in found] == ["outcome error, declared completed", "output lacks /done/",
                                       "grew_mb=161.5 > 50", "count was not measured"]
    assert [Breach.of(json.loads(json.dumps(b.record()))) for b in found] == found   # stored and read back


@pytest.mark.parametrize("share, breaches, unjudged", [
    (None, ["ratio is a timing bound, and cpu_wait_share was not measured"], 0),
    (0.05, ["ratio=0.5 < 0.9"], 0),
    (0.6, [], 1),
])
def test_a_timing_bound_is_judged_only_while_the_run_had_the_cpus(tmp_path, share, breaches, unjudged):
    script = "print('metric ratio=0.5')" + (f"; print('metric cpu_wait_share={share}')" if share else "")
    result = run(tmp_path, script, metrics={"ratio": {"min": 0.9, "timing": True}})
    assert [str(Breach.of(b)) for b in result["breaches"]] == breaches and len(result["unjudged"]) == unjudged
    if unjudged:
        assert result["unjudged"][0].startswith("ratio: a timing bound, not judged: the run's processes waited "
                                                "for a CPU 60% of the time")


def test_declared_evidence_must_appear(tmp_path):
    result = run(tmp_path, "print('all good')", evidence=r"exited unexpectedly")
    assert result["outcome"] == "completed"
    assert [str(Breach.of(b)) for b in result["breaches"]] == ["output lacks /exited unexpectedly/"]


def test_an_outcome_other_than_declared_is_a_breach(tmp_path):
    result = run(tmp_path, "print('epoch done')", expect="error")
    assert [str(Breach.of(b)) for b in result["breaches"]] == ["outcome completed, declared error"]
    assert not result["as_expected"]


def test_memory_of_workers_is_sampled(tmp_path):
    result = run(tmp_path, """
        import multiprocessing as mp, time
        def hold():
            block = bytearray(60 * 2**20)   # private memory the worker writes
            time.sleep(1.5)
        if __name__ == "__main__":
            worker = mp.get_context("fork").Process(target=hold)
            worker.start(); worker.join()
    """)
    assert result["metrics"]["sampled_worker_uss_peak_mb"] >= 55
    assert max(sample["main"] for _, sample in result["memory"]) > 0


def test_leftover_torch_shm_files_are_removed_and_reported(tmp_path):
    # Named as torch names them, after the creating process: a run started at the same time
    # (`make test` runs two) counts only the files its own processes made.
    result = run(tmp_path, """
        import os, time
        open(f"/dev/shm/torch_{os.getpid()}_clinic_test_0", "wb").write(b"x")
        time.sleep(1)   # long enough to be sampled as one of the run's processes
    """)
    assert len(result["leaked_shm_files"]) == 1
    name = result["leaked_shm_files"][0]
    assert name.startswith("torch_") and name.endswith("_clinic_test_0")
    assert not (Path("/dev/shm") / name).exists()


def test_a_semaphore_a_sigkill_left_under_glibcs_temporary_name_is_removed(tmp_path, monkeypatch):
    # glibc's sem_open writes a new semaphore under sem.XXXXXX, then links and unlinks it: one a
    # SIGKILL left there carries no pid and no process maps it, so no run can call it its own leak:
    # it is removed unreported.  One made a moment ago may be another run's creation in flight: it is
    # waited for, and stays its own.
    # In a folder of the test's own: planted in /dev/shm, the runs beside it would take them (once in CI).
    monkeypatch.setattr(shm_leaks, "SHM", tmp_path)
    before = shm_leaks.shm_names()
    left, in_flight = tmp_path / "sem.Zq81xT", tmp_path / "sem.Zq81xU"
    named, made_in_flight = tmp_path / "sem.mp-clinic-test", tmp_path / "sem.mp-clinic-in-flight"
    for path in (left, in_flight, named):
        path.write_bytes(bytes(32))  # named: one nobody in this run mapped, not its to remove
    long_ago = time.time() - shm_leaks.TEMPORARY_AGE_S - 1
    os.utime(left, (long_ago, long_ago))
    linked = threading.Timer(0.3, lambda: (os.link(in_flight, made_in_flight), in_flight.unlink()))
    linked.start()
    assert shm_leaks.remove_leaked_shm(before, set()) == []
    linked.join()
    assert not left.exists() and named.exists() and made_in_flight.exists()


@pytest.mark.parametrize("argument, message", [
    ("99", "no scenario 99; available: "),
    ("x3", "'x3' is not a scenario number"),
])
def test_cli_rejects_unknown_scenarios_in_one_line(argument, message):
    done = subprocess.run([sys.executable, "-m", "scenarios", "run", argument],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1


def test_cli_rejects_unknown_variant():
    done = subprocess.run([sys.executable, "-m", "scenarios", "run", "03", "--variant", "nope"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "has no variant nope" in done.stderr


def test_cli_lists_every_scenario_folder():
    done = subprocess.run([sys.executable, "-m", "scenarios", "list"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    folders = sorted(p.name[:2] for p in (REPO_ROOT / "scenarios").glob("[0-9][0-9]_*") if p.is_dir())
    assert [line.split()[0] for line in done.stdout.splitlines()] == folders


def test_platform_without_fork_is_refused_clearly(monkeypatch):
    monkeypatch.setattr(declarations.multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    with pytest.raises(declarations.CannotRunHere, match="needs the 'fork' start method"):
        runner.run_scenario("03")


def _is_subreaper() -> bool:
    PR_GET_CHILD_SUBREAPER = 37
    flag = ctypes.c_int(0)
    ctypes.CDLL(None, use_errno=True).prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0)
    return bool(flag.value)


def test_orphans_are_reaped_without_changing_the_calling_process(tmp_path):
    # The script exits at once; its forked child lives on as an orphan until the runner kills it.
    pid_file = tmp_path / "orphan.pid"
    before = _is_subreaper()
    result = run(tmp_path, f"""
        import os, time
        if os.fork() == 0:
            open({str(pid_file)!r}, "w").write(str(os.getpid()))
            time.sleep(600)
        time.sleep(0.5)
    """)
    orphan = int(pid_file.read_text())
    assert result["outcome"] == "completed" and result["surviving_processes"] == 0
    assert not psutil.pid_exists(orphan)  # gone, not even a zombie: somebody reaped it
    assert _is_subreaper() == before  # pytest's process was left as it was


def test_paths_are_shown_relative_to_the_repository_and_site_packages(tmp_path):
    result = run(tmp_path, "import json; json.loads('{')", expect="error")
    assert "json/decoder.py" in result["output_tail"]
    assert sys.prefix not in result["output_tail"] and sys.base_prefix not in result["output_tail"]
    site = sysconfig.get_paths()["purelib"]
    assert supervise.readable_paths(f'File "{site}/torch/x.py"') == 'File "site-packages/torch/x.py"'
    assert supervise.readable_paths(f"{REPO_ROOT}/scenarios/03_x/broken.py") == "scenarios/03_x/broken.py"


def test_a_hang_without_py_spy_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setattr(supervise, "py_spy_path", lambda: None)
    result = run(tmp_path, "import time; time.sleep(600)", limit_s=1, expect="hang")
    assert "py-spy is not installed (`pip install py-spy`)" in result["stacks"]


def test_a_killed_run_leaves_no_temporary_folder_and_its_cpu_is_counted(tmp_path):
    # A process killed by the limit never runs multiprocessing's exit handlers, which would
    # remove the pymp-* folder it made in TMPDIR: the run's own TMPDIR goes instead.
    folder_file = tmp_path / "tmpdir"
    result = run(tmp_path, f"""
        import multiprocessing.util, tempfile, time
        multiprocessing.util.get_temp_dir()
        open({str(folder_file)!r}, "w").write(tempfile.gettempdir())
        deadline = time.process_time() + 0.5
        while time.process_time() < deadline:  # half a second of CPU, then wait to be killed
            pass
        time.sleep(600)
    """, limit_s=3, expect="hang")
    assert result["outcome"] == "hang"
    folder = Path(folder_file.read_text())
    assert folder.name.startswith("clinic-run-") and not folder.exists()
    assert 0.5 <= result["metrics"]["cpu_s"] < 10


def test_results_are_recorded_and_reused_within_one_session(tmp_path, monkeypatch):
    monkeypatch.setenv(runner.RESULTS_ENV, str(tmp_path))
    calls = []
    monkeypatch.setattr(runner, "run_variant", lambda scenario, name, show, **hook: calls.append(name) or {
        "outcome": "completed", "as_expected": True})
    first = runner.run_scenario("03", ["fixed"])
    second = runner.run_scenario("03", ["fixed"])
    assert calls == ["fixed"]
    assert second["variants"]["fixed"]["reused"] and "reused" not in first["variants"]["fixed"]
    assert json.loads((tmp_path / "03_list_refcount_growth.fixed.json").read_text())["outcome"] == "completed"


def test_status_of_many_scenarios_mismatch_beats_cannot_run_beats_ok():
    assert _combine([0, 0]) == host.EXIT_OK
    assert _combine([0, 3]) == host.EXIT_CANNOT_RUN
    assert _combine([3, 1, 0]) == host.EXIT_NOT_AS_EXPECTED


def test_summary_names_the_scenarios_not_run_and_why():
    text = report.summary([], {"04": "needs `unshare` from util-linux"})
    assert "04  not run here: needs `unshare` from util-linux" in text


@pytest.mark.parametrize("stop, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["SIGTERM", "Ctrl-C"])
def test_a_stopped_command_ends_its_run_and_leaves_nothing(tmp_path, stop, status):
    # `timeout`, a closed terminal, a cancelled CI job send SIGTERM; a person, Ctrl-C.  Either must
    # end the run in progress; otherwise 01's broken.py, a hang by design, would outlive the command.
    env = {k: v for k, v in os.environ.items() if k != runner.RESULTS_ENV}  # a run, not a reuse
    env["TMPDIR"] = str(tmp_path)
    command = subprocess.Popen([sys.executable, "-m", "scenarios", "run", "01", "--variant", "broken", "--json"],
                               cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as in a terminal
    try:
        deadline, script = time.monotonic() + 30, None
        while script is None:
            assert time.monotonic() < deadline and command.poll() is None, "the script never started"
            time.sleep(0.1)
            script = next((p for p in psutil.Process(command.pid).children(recursive=True)
                           if _command_line(p)[1:] and _command_line(p)[1].endswith("broken.py")), None)
        reaper = script.parent()
        while not script.children():  # the hang: the workers are up, waiting on the inherited lock
            assert time.monotonic() < deadline and command.poll() is None, "no worker started"
            time.sleep(0.1)
        command.send_signal(stop)
        said = command.communicate(timeout=20)[1]
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()
    # The script runs in a session of its own, its workers with it, below the reaper: none of
    # them may be left (without the handler all four were, hanging on the lock).
    deadline = time.monotonic() + 10
    while left := [p for p in psutil.process_iter() if _session(p) in (script.pid, reaper.pid)]:
        if time.monotonic() > deadline:
            for proc in left:
                proc.kill()
            pytest.fail(f"left running after the command ended: {left}")
        time.sleep(0.1)
    assert command.returncode == status  # ended through the runner's cleanup, not by the signal itself
    assert "Traceback" not in said
    assert list(tmp_path.glob("clinic-run-*")) == []


def _command_line(proc) -> list:
    try:
        return proc.cmdline()
    except psutil.Error:
        return []


def _session(proc) -> int | None:
    try:
        return os.getsid(proc.pid)
    except OSError:
        return None


def test_workers_the_hook_recorded_count_where_the_poll_missed_them():
    from scenarios.clinic.run.supervise import Supervised

    run = Supervised.__new__(Supervised)   # the census alone: no process started
    run.seen, run.helpers = {1: None, 2: None, 3: None}, {3}
    run.script = lambda: type("P", (), {"pid": 1})()
    assert run.workers_seen() == 1
    assert run.workers_seen({2, 7, 8}) == 3   # 2 seen by both, 7 and 8 lived between two polls
