"""Every module in fixes/ is one file a user copies: it imports no other project module and
works when copied alone into an empty folder."""
import ast
import subprocess
import sys

import pytest

from conftest import REPO_ROOT

MODULES = sorted(p for p in (REPO_ROOT / "fixes").glob("[a-z]*.py"))


def _imported(path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield "." * node.level + (node.module or "")


@pytest.mark.parametrize("path", MODULES, ids=[p.stem for p in MODULES])
def test_fix_imports_no_project_module(path):
    project = [name for name in _imported(path)
               if name.startswith((".", "fixes", "scenarios", "tests"))]
    assert project == [], f"fixes/{path.name} imports {project}: inline what it needs"


@pytest.mark.parametrize("path", MODULES, ids=[p.stem for p in MODULES])
def test_fix_works_copied_alone_into_an_empty_folder(path, tmp_path):
    (tmp_path / path.name).write_text(path.read_text())
    # The repository is taken off sys.path (the venv's .pth puts it there), and its packages
    # are made unimportable, as on a user's machine.
    probe = (f"import sys; sys.path = [p for p in sys.path if p.rstrip('/') != {str(REPO_ROOT)!r}]; "
             "sys.modules['fixes'] = sys.modules['scenarios'] = None; "
             f"sys.path.insert(0, {str(tmp_path)!r}); import {path.stem} as m; "
             "print(m.__file__)")
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(tmp_path / path.name)


@pytest.mark.parametrize("path", MODULES, ids=[p.stem for p in MODULES])
def test_fix_says_which_scenario_it_fixes(path):
    docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
    assert "scenario" in docstring.lower(), f"fixes/{path.name}: say in its docstring which scenario it fixes"
