"""`python -m scenarios explain`: logs from the scenarios' own runs, texts from torch's sources,
logs wrapped by launchers, and logs with no DataLoader failure in them."""
import json
import subprocess
import sys

import pytest
from conftest import REPO_ROOT, scenario_report

from scenarios.clinic.doctor.explain import explain_text

# (scenario, variant whose output holds a genuine traceback, the scenario explain must name)
OWN_RUNS = [("01", "myth_timeout", "01"), ("02", "broken", "02"), ("04", "broken", "04"), ("06", "broken", "06"),
            ("08", "broken", "08"), ("09", "broken", "09"), ("09", "broken_main_guard", "09"),
            ("11", "myth_forkserver", "09"), ("16", "broken", "16"), ("17", "broken", "17"), ("18", "broken", "18")]

# Messages as torch 2.13's own sources word them (torch/utils/data/dataloader.py,
# torch/utils/data/_utils/signal_handling.py and torch/csrc/DataLoader.cpp), in the traceback shape users paste.
TORCH_TEXTS = [
    ("RuntimeError: DataLoader worker (pid(s) 4242) exited unexpectedly", "06"),
    ("RuntimeError: DataLoader worker (pid 4242) is killed by signal: Segmentation fault.", "06"),
    ("RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error. It is possible that dataloader's "
     "workers are out of shared memory. Please try to raise your shared memory limit.", "04"),
    ("RuntimeError: Too many open files. Communication with the workers is no longer possible. Please increase the "
     "limit using `ulimit -n` in the shell or change the sharing strategy by calling "
     "`torch.multiprocessing.set_sharing_strategy('file_system')` at the beginning of your code", "08"),
    ("RuntimeError: DataLoader timed out after 30 seconds", "01"),
]


def _wrapped(text: str) -> str:
    return f"Traceback (most recent call last):\n  File \"train.py\", line 10, in <module>\n" \
           f"  File \"site-packages/torch/utils/data/dataloader.py\", line 1, in __next__\n{text}\n"


@pytest.mark.parametrize("number, variant, expected", OWN_RUNS, ids=[f"{n}-{v}" for n, v, _ in OWN_RUNS])
def test_a_scenarios_own_failure_is_explained_by_it(number, variant, expected):
    run = scenario_report(number)["variants"][variant]
    named = {f.scenario for f in explain_text(run["output"])}
    assert expected in named, f"{sorted(named)} from:\n{run['output'][-2000:]}"
    assert len(named) == 1, named


@pytest.mark.parametrize("number", sorted({n for n, _, _ in OWN_RUNS}))
def test_a_scenarios_fixed_run_names_nothing(number):
    run = scenario_report(number)["variants"]["fixed"]
    assert explain_text(run["output"]) == [], run["output"][-2000:]


@pytest.mark.parametrize("text, expected", TORCH_TEXTS)
def test_torchs_own_texts(text, expected):
    assert [f.scenario for f in explain_text(_wrapped(text))] == [expected]


def test_chained_cause_under_exited_unexpectedly_and_launcher_wrapping():
    # torchrun's prefixes, tqdm's redrawn bar, Windows paths: the chained "killed by signal" decides.
    log = "\r".join(f"epoch 0: {i}%|##  | {i}/100" for i in range(0, 40, 10)) + "\n"
    log += "".join(f"[rank0]: {line}\n" for line in [
        "Traceback (most recent call last):",
        '  File "C:\\Users\\me\\train.py", line 40, in <module>',
        '  File "C:\\Python311\\Lib\\site-packages\\torch\\utils\\data\\dataloader.py", line 1133, in _try_get_data',
        "RuntimeError: DataLoader worker (pid 77) is killed by signal: Segmentation fault.",
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "RuntimeError: DataLoader worker (pid(s) 77) exited unexpectedly"])
    assert [(f.scenario, f.check) for f in explain_text(log)] == [("06", "worker-crash")]


@pytest.mark.parametrize("log", [
    "epoch 1 loss 0.31\nepoch 2 loss 0.29\ndone\n",
    _wrapped("x").replace("torch/utils/data/dataloader.py", "torch/nn/modules/module.py").replace(
        "x\n", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.1 GiB total)\n"),
    "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\nKeyError: 'label'\n",
])
def test_no_dataloader_failure_names_nothing(log):
    assert explain_text(log) == []


def test_command_line_exit_statuses_and_json(tmp_path):
    def explain(*args, stdin=""):
        return subprocess.run([sys.executable, "-m", "scenarios", "explain", *args], cwd=REPO_ROOT, input=stdin,
                              capture_output=True, text=True, timeout=60)
    log = tmp_path / "job.log"
    log.write_text(_wrapped(TORCH_TEXTS[3][0]))
    found = explain(str(log), "--json")
    assert found.returncode == 1 and found.stderr == ""
    (finding,) = json.loads(found.stdout)["findings"]
    assert set(finding) == {"scenario", "level", "check", "evidence", "fix", "readme"} and finding["scenario"] == "08"
    assert explain("-", stdin="all good\n").returncode == 0
    missing = explain(str(tmp_path / "nope.log"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr and "Traceback" not in missing.stderr
    assert explain(stdin="  \n").returncode == 2
