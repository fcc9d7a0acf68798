"""Every walkthrough in notebooks/ executes from top to bottom without an error."""

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from conftest import REPO_ROOT

NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))  # the kernel imports scenarios/ and fixes/
    monkeypatch.setenv("MPLBACKEND", "Agg")
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    try:
        client.execute()
    except CellExecutionError as error:
        # The failing cell alone rarely says why: show what the cells before it printed.
        printed = "\n".join(out.get("text", "") for cell in notebook.cells if cell.cell_type == "code"
                            for out in cell.outputs if out.output_type == "stream")
        pytest.fail(f"{error}\n--- output of the cells before it ---\n{printed}")
    errors = [out for cell in notebook.cells if cell.cell_type == "code"
              for out in cell.outputs if out.output_type == "error"]
    assert not errors


def test_every_scenario_has_a_notebook():
    scenarios = sorted(p.name for p in (REPO_ROOT / "scenarios").glob("[0-9][0-9]_*") if p.is_dir())
    assert [p.stem for p in NOTEBOOKS if p.stem[:2].isdigit()] == scenarios  # and bench.ipynb
