"""`make gpu-check` (scenarios/clinic/gpu_check.py): on a machine without a usable CUDA device it says
why and exits 3; on one, every step is bounded.  Its archive's reading is tests/test_tables.py's."""
import subprocess
import sys
import time

import pytest

from conftest import REPO_ROOT
from scenarios.clinic import gpu_check
from scenarios.host import EXIT_CANNOT_RUN, cuda_problem


def test_without_a_gpu_it_says_why_and_exits_3():
    if cuda_problem() is None:
        pytest.skip("this machine has a CUDA device: gpu-check runs here")
    done = subprocess.run([sys.executable, "-m", "scenarios.clinic.gpu_check"], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == EXIT_CANNOT_RUN and done.stdout == ""
    assert done.stderr.startswith("gpu-check cannot run here: needs a CUDA GPU") and "Traceback" not in done.stderr


def test_the_gpu_scenarios_are_those_whose_declarations_need_cuda():
    assert set(gpu_check.gpu_scenarios()) >= {"25", "26", "27", "28"}
    assert all("cuda" in scenario.needs for scenario in gpu_check.gpu_scenarios().values())


def test_a_step_past_its_budget_is_stopped_with_its_process_group(tmp_path):
    # The child leaves a grandchild in its group: stopping the step must end both.
    mark = str(tmp_path)  # names this test's processes alone among the machine's
    code = (f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', "
            f"{mark!r}]); print('started', flush=True); time.sleep(60)")
    started = time.monotonic()
    status = gpu_check.bounded([sys.executable, "-c", code], {}, 2, tmp_path / "out.txt")
    assert status is None and time.monotonic() - started < 30
    assert (tmp_path / "out.txt").read_text() == "started\n"
    time.sleep(0.5)  # the killed grandchild's exit, as the kernel reports it
    left = subprocess.run(["pgrep", "-f", mark], capture_output=True, text=True).stdout.split()
    assert left == []
    assert gpu_check.bounded([sys.executable, "-c", "print('done')"], {}, 30, tmp_path / "ok.txt") == 0
