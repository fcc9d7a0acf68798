"""What the tests of scenarios 25-28 share: the GPU texts explain must map, the doctor run on the
loaders of tests/loaders/gpu_in_workers.py, the runner's answer on a machine without CUDA, and the
variants' outputs kept where a test of a GPU run fails."""
import contextlib
import json
import subprocess
import sys

import pytest
from conftest import REPO_ROOT, scenario_report

from scenarios.host import EXIT_CANNOT_RUN, cuda_problem

GPU_LOGS = REPO_ROOT / "tests" / "logs" / "gpu"
LOADERS = "tests/loaders/gpu_in_workers.py"
KEPT = REPO_ROOT / "out" / "gpu-tests"  # out/ is ignored by git; `make gpu-check` keeps every result too


def gpu_logs(number: str) -> list:
    return sorted(GPU_LOGS.glob(f"{number}_*.log"))


def doctor_findings(function: str, probe: bool = True) -> list[dict]:
    """The doctor on one of the GPU loaders, in a process of its own, which must never have
    initialised CUDA when it ends."""
    code = ("import json, sys, torch; from scenarios.clinic.doctor import examine_file; "
            f"found = examine_file({LOADERS + ':' + function!r}, with_probe={probe}, limit_s=25); "
            "print(json.dumps([f.as_dict() for f in found])); "
            "sys.exit(7 if torch.cuda.is_initialized() else 0)")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def named(findings: list[dict]) -> set[tuple[str, str, str]]:
    return {(f["scenario"], f["level"], f["check"]) for f in findings}


def assert_cannot_run_here(number: str) -> None:
    """Without a usable CUDA device the runner answers status 3, with the one sentence."""
    why = cuda_problem()
    if why is None:
        pytest.skip("this machine has a CUDA device: the scenario runs here")
    done = subprocess.run([sys.executable, "-m", "scenarios", "run", number], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == EXIT_CANNOT_RUN
    assert done.stderr.strip() == f"error: scenario {number} cannot run here: {why}"
    assert why.startswith("needs a CUDA GPU: ") and "\n" not in why


@contextlib.contextmanager
def outputs_kept(number: str, runs: dict | None = None):
    """Scenario NN's variants as this session ran them (or `runs`); where a check of them fails,
    each variant's output is written to out/gpu-tests/NN_<variant>.txt and the failure says so,
    with the end of each output: a run on a lent card is seldom run again."""
    runs = scenario_report(number)["variants"] if runs is None else runs
    try:
        yield runs
    except Exception as failed:  # an assertion, or a figure missing from a run that failed
        KEPT.mkdir(parents=True, exist_ok=True)
        for name, run in runs.items():
            (KEPT / f"{number}_{name}.txt").write_text(
                f"outcome {run.get('outcome')}, exit {run.get('exit_code')}\n{run.get('output_tail', '')}")
            failed.add_note(f"--- {number} {name} ({run.get('outcome')}), its output's end:\n"
                            f"{run.get('output_tail', '')[-1500:]}")
        failed.add_note(f"every variant's output kept in {KEPT}/{number}_*.txt")
        raise
