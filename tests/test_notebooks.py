"""Every walkthrough in notebooks/ executes from top to bottom without an error (`make test-full`:
each runs every variant of its scenario), and what is stored in it (what a reader sees on GitHub,
without running anything) shows each plot it draws and no failed run, clean-up noise or path of
the machine that executed it."""
import re

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from conftest import REPO_ROOT

NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))
IDS = [p.stem for p in NOTEBOOKS]

DRAWS = re.compile(r"\bplt\.\w+\(|\bFigure\(")  # a cell that calls pyplot, or makes a Figure, draws one
# What no stored walkthrough may show.  A worker's traceback printed as evidence is the lesson;
# a traceback on stderr is the notebook's own code failing.
UNEXPLAINED = {
    "a variant that differs from its declaration": re.compile(r"✘|differs from its declaration"),
    "the runner's clean-up of a leak": re.compile(r"removed leftover /dev/shm files"),
    "multiprocessing's resource tracker warning": re.compile(r"leaked (semaphore|shared_memory|folder)"),
    "a figure that was not drawn": re.compile(r"is non-interactive, and thus cannot be shown"),
    "a path of the executing machine": re.compile(
        rf"(^|[\s\"'(=:])(/(work|root|home|tmp|Users)/|{re.escape(str(REPO_ROOT))})", re.M),
}


def _code_cells(notebook):
    """(number as Jupyter counts cells from 1, its first line, the cell) of each code cell."""
    return [(n, cell.source.strip().splitlines()[0] if cell.source.strip() else "", cell)
            for n, cell in enumerate(notebook.cells, 1) if cell.cell_type == "code"]


def _texts(output):
    """The text a reader sees of one stored output (never an image's bytes)."""
    if output.output_type == "stream":
        return [output.text]
    if output.output_type == "error":
        return [f"{output.ename}: {output.evalue}", *output.traceback]
    return [v if isinstance(v, str) else "".join(v)
            for k, v in output.get("data", {}).items() if k.startswith("text/")]


def _plots_missing(notebook) -> list[str]:
    """Plotting cells with no picture stored.  The one excuse: the notebook's run stored the
    runner's "cannot run here" (a GPU scenario executed without a GPU) and the cell says it drew
    no figure for that reason."""
    cells = list(_code_cells(notebook))
    said = {n: " ".join(text for out in cell.outputs for text in _texts(out)) for n, _, cell in cells}
    not_run = any("cannot run here" in text for text in said.values())
    return [f"cell {n} ({first}) draws a plot but holds no picture"
            for n, first, cell in cells
            if DRAWS.search(cell.source) and not any("image/png" in out.get("data", {}) for out in cell.outputs)
            and not (not_run and "no figure:" in said[n])]


@pytest.mark.full  # a walkthrough runs every variant of its scenario, myth_* and measure_* included
@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_executes(path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))  # the kernel imports scenarios/ and fixes/
    # As a headless shell may set it: a walkthrough must draw inline (`%matplotlib inline`) all the
    # same, or `make notebooks` run from such a shell stores no picture.
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
    assert not _plots_missing(notebook)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_stored_notebook_shows_every_plot_it_draws(path):
    missing = _plots_missing(nbformat.read(path, as_version=4))
    assert not missing, f"{path.name}: " + "; ".join(missing) + ": re-execute it (make notebooks)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_stored_notebook_shows_no_failure_or_noise(path):
    found = []
    for n, first, cell in _code_cells(nbformat.read(path, as_version=4)):
        for out in cell.outputs:
            if out.output_type == "error" or (out.get("name") == "stderr" and "Traceback" in out.text):
                found.append(f"cell {n} ({first}): an error: {_texts(out)[0][:200]}")
            for text in _texts(out):
                for line in text.splitlines():
                    found += [f"cell {n} ({first}): {what}: {line.strip()[:200]}"
                              for what, pattern in UNEXPLAINED.items() if pattern.search(line)]
    assert not found, f"{path.name} stores:\n" + "\n".join(found)


def test_every_scenario_has_a_notebook():
    scenarios = sorted(p.name for p in (REPO_ROOT / "scenarios").glob("[0-9][0-9]_*") if p.is_dir())
    assert [p.stem for p in NOTEBOOKS if p.stem[:2].isdigit()] == scenarios  # and bench.ipynb


def test_a_plot_without_its_picture_is_excused_only_by_a_run_that_could_not_happen():
    def notebook(first_output: str, plot_output: str):
        runs = nbformat.v4.new_code_cell("print(run())", outputs=[nbformat.v4.new_output("stream", text=first_output)])
        plot = nbformat.v4.new_code_cell("fig = Figure()", outputs=[nbformat.v4.new_output("stream", text=plot_output)])
        return nbformat.v4.new_notebook(cells=[runs, plot])
    not_run, no_figure = "scenario 25 cannot run here: needs a CUDA GPU", "no figure: the runs need a CUDA GPU"
    assert _plots_missing(notebook("✔ fixed", no_figure))
    assert _plots_missing(notebook(not_run, ""))
    assert not _plots_missing(notebook(not_run, no_figure))


def test_a_gpu_walkthrough_stored_without_a_card_shows_the_stored_gpu_run_as_it_is_now():
    # Where the stored output says the runs could not happen here, the walkthrough printed the
    # stored run of a machine with a GPU (measured/gpu.json): a newer one stored since must be shown.
    from scenarios.clinic import measured
    from scenarios.clinic.run.declarations import discover

    for number, scenario in discover().items():
        record = measured.load(scenario.path, "gpu") if "cuda" in scenario.needs else None
        path = REPO_ROOT / "notebooks" / f"{scenario.slug}.ipynb"
        if record is None or not path.is_file():
            continue
        said = "".join(text for _, _, cell in _code_cells(nbformat.read(path, as_version=4))
                       for out in cell.outputs for text in _texts(out))
        if "cannot run here" in said:
            assert measured.summary_text(record) in said, f"{path.name}: re-execute it (make notebooks)"
