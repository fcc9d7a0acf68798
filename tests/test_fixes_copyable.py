"""Every module in fixes/ is one file a user copies: it imports no other project module and
works when copied alone into an empty folder."""
import ast
import json
import subprocess
import sys
from pathlib import Path

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


# One process imports every fix, each copied alone into a folder of its own and forgotten
# again before the next (sys.path and sys.modules), so that `import torch` is paid once.
# The repository is taken off sys.path (the venv's .pth puts it there), and its packages are
# made unimportable, as on a user's machine.
_IMPORT_EACH_ALONE = f"""
import importlib, json, sys, traceback
sys.path = [p for p in sys.path if p.rstrip('/') != {str(REPO_ROOT)!r}]
sys.modules['fixes'] = sys.modules['scenarios'] = sys.modules['tests'] = None
found = {{}}
for folder, name in json.loads(sys.argv[1]):
    sys.path.insert(0, folder)
    try:
        found[name] = importlib.import_module(name).__file__
    except BaseException:
        found[name] = 'failed: ' + traceback.format_exc()
    finally:
        sys.path.remove(folder)
        sys.modules.pop(name, None)
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def imported_alone(tmp_path_factory) -> dict:
    """{module name: the file it was imported from, or why it failed}."""
    copies = []
    for path in MODULES:
        folder = tmp_path_factory.mktemp(path.stem)
        (folder / path.name).write_text(path.read_text())
        copies.append((str(folder), path.stem))
    done = subprocess.run([sys.executable, "-c", _IMPORT_EACH_ALONE, json.dumps(copies)],
                          cwd=tmp_path_factory.getbasetemp(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return {name: (folder, json.loads(done.stdout)[name]) for folder, name in copies}


@pytest.mark.parametrize("path", MODULES, ids=[p.stem for p in MODULES])
def test_fix_works_copied_alone_into_an_empty_folder(path, imported_alone):
    folder, imported_from = imported_alone[path.stem]
    assert imported_from == str(Path(folder) / path.name), imported_from


@pytest.mark.parametrize("path", MODULES, ids=[p.stem for p in MODULES])
def test_fix_says_which_scenario_it_fixes(path):
    docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
    assert "scenario" in docstring.lower(), f"fixes/{path.name}: say in its docstring which scenario it fixes"
