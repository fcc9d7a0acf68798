"""Shared by the tests: run a scenario through the real command line, as `make` does."""
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


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


def run_scenario_json(number: str, *variants: str) -> dict:
    """`python -m scenarios run NN --json --variant …`, parsed; skips where it cannot run."""
    done = subprocess.run(
        [sys.executable, "-m", "scenarios", "run", number, "--json", "--variant", *variants],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
    )
    if done.returncode == 3:
        pytest.skip(done.stderr.strip())
    assert done.returncode in (0, 1), f"runner failed (exit {done.returncode}):\n{done.stderr}"
    report = json.loads(done.stdout)
    assert {"scenario", "title", "reproduced", "fixed", "variants", "torch", "python"} <= report.keys()
    for name, run in report["variants"].items():
        assert {"outcome", "exit_code", "seconds", "evidence", "metrics", "output_tail",
                "memory", "stacks", "breaches"} <= run.keys()
        assert run["surviving_processes"] == 0, f"{name}: processes outlived the run"
        assert run["leaked_shm_files"] == [], f"{name}: left /dev/shm files {run['leaked_shm_files']}"
    return report
