"""A new scenario is its own files: `python -m scenarios new NN slug` writes every file a scenario
adds (scenarios/clinic/skeleton.py, ADDS), `make test` reports each NOT YET WRITTEN until it is
written, and nothing else in the repository needs an edit: the scenario, its check, its exercise
and its table rows are found by their files (shown here on a copy of the repository)."""
import fnmatch
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO_ROOT
from scenarios.clinic import skeleton

FOLDER = "99_new_failure"


def test_new_writes_exactly_the_files_a_scenario_adds(tmp_path):
    (tmp_path / "scenarios").mkdir()
    written = skeleton.write(tmp_path, "99", "new_failure")
    on_disk = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert sorted(written) == on_disk == sorted(skeleton.paths(FOLDER))
    assert skeleton.unwritten(tmp_path, FOLDER) == written   # every one says so until written


def test_new_refuses_a_taken_number_a_bad_name_and_a_file_it_would_overwrite(tmp_path):
    done = _cli(REPO_ROOT, "new", "03", "another_copy")
    assert done.returncode == 2 and "scenario 03 exists: scenarios/03_" in done.stderr, done.stderr
    assert _cli(REPO_ROOT, "new", "9", "Bad Name").returncode == 2
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_scenario_99.py").write_text("# someone's own\n")
    try:
        skeleton.write(tmp_path, "99", "new_failure")
    except ValueError as err:
        assert "tests/test_scenario_99.py" in str(err)
    else:
        raise AssertionError("wrote over a file")
    assert not (tmp_path / "scenarios" / FOLDER).exists()


def test_the_map_lists_every_file_a_new_scenario_adds():
    section = (REPO_ROOT / "scenarios" / "MAP.md").read_text().split("## A new scenario", 1)[1]
    for name in skeleton.paths("NN_slug"):
        assert Path(name).name in section, f"scenarios/MAP.md's new-scenario table lacks {name}"


def _copy_of_the_repository(root: Path) -> Path:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=REPO_ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (REPO_ROOT / name).is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / name, root / name)
    return root


def _digests(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.blake2b(p.read_bytes()).hexdigest()
            for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts and ".pytest_cache" not in p.parts}


def _cli(root: Path, *args: str, module: str | None = "scenarios") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}
    run_as = ["-m", module] if module else []
    return subprocess.run([sys.executable, *run_as, *args], cwd=root, env=env, capture_output=True, text=True,
                          timeout=600)


def test_a_new_scenario_is_found_everywhere_and_edits_nothing_else(tmp_path):
    copy = _copy_of_the_repository(tmp_path / "repo")
    before = _digests(copy)
    done = _cli(copy, "new", "99", "new_failure")
    assert done.returncode == 0, done.stderr
    after = _digests(copy)
    assert {name for name in after if before.get(name) != after[name]} == set(skeleton.paths(FOLDER))

    # Found by its files: the runner's list and the doctor's checks, with no registry edited.
    assert "99  NOT YET WRITTEN" in _cli(copy, "list").stdout
    found = _cli(copy, "-c", "from scenarios.clinic.doctor.checks import CHECKS, name_of; "
                 f"print({FOLDER!r} in [name_of(c) for c in CHECKS])", module=None).stdout
    assert found.strip() == "True"

    # Its stubs never pass their declaration; the tables take its rows in the generated files alone.
    assert _cli(copy, "run", "99").returncode == 1
    done = _cli(copy, "tables")
    assert done.returncode == 0, done.stderr
    changed = {name for name, digest in _digests(copy).items() if before.get(name) != digest}
    assert all(any(fnmatch.fnmatch(name, allowed) for allowed in skeleton.may_change(FOLDER)) for name in changed)
    generated = {"README.md", "scenarios/WORKSHOP.md", "scenarios/HEALTHY.md"}
    assert changed - set(skeleton.paths(FOLDER)) <= generated, changed

    # A message of a library only it is about goes in its own folder's catalogue part, no shared file.
    part = copy / "scenarios" / FOLDER / "catalogue.txt"
    part.write_text("== json decoder.py\n99 ctx  Expecting value\n")
    read = _cli(copy, "-c", "from scenarios.clinic.doctor import catalogue; "
                "print([(e.package, e.scenario, e.text) for e in catalogue.entries() if e.scenario == '99'])",
                module=None)
    assert read.stdout.strip() == "[('json', '99', 'Expecting value')]", read.stderr
    assert any(fnmatch.fnmatch(str(part.relative_to(copy)), allowed) for allowed in skeleton.may_change(FOLDER))
    part.unlink()

    # make test fails on it, naming what is left to write; its own test and the layout's alike.
    tests = _cli(copy, "-p", "no:randomly", "-p", "no:cacheprovider", "-q", "tests/test_scenario_99.py",
                 "tests/test_layout.py", "-k", "test_scenario_99_is_written or has_all_it_needs and 99_new_failure",
                 module="pytest")
    assert tests.returncode == 1, tests.stdout[-3000:]
    assert "scenario 99 is not yet written: scenarios/99_new_failure/README.md" in tests.stdout, tests.stdout[-3000:]
    assert "scenario 99 is NOT YET WRITTEN: scenarios/99_new_failure/README.md" in tests.stdout, tests.stdout[-3000:]
    assert tests.stdout.splitlines()[-1].startswith("2 failed,") and "passed" not in tests.stdout.splitlines()[-1]
