"""Scenario 09, broken_notebook: a Dataset class defined in a notebook cell, under spawn.

    python scenarios/09_spawn_pitfalls/broken_notebook.py

Runs three cells in a real Jupyter kernel, as a notebook on macOS or Windows
(where spawn is the default) would, and prints what the notebook shows.
Expect the training cell to fail with
    RuntimeError: DataLoader worker (pid(s) …) exited unexpectedly
and the worker's own traceback, on the kernel's stderr (the terminal behind
a notebook; ipykernel often, not always, copies it into the cell), to say
    AttributeError: Can't get attribute 'SquaresDataset' on <module '__main__' (built-in)>
"""
import sys
import tempfile

import nbformat
from jupyter_client.kernelspec import NoSuchKernel
from nbclient import NotebookClient

from scenarios.host import cannot_run

SETUP_CELL = "import torch\nfrom torch.utils.data import DataLoader, Dataset\n"
DATASET_CELL = '''
class SquaresDataset(Dataset):
    def __len__(self):
        return 256

    def __getitem__(self, index):
        return torch.tensor([float(index * index)])
'''
TRAIN_CELL = '''
loader = DataLoader(SquaresDataset(), batch_size=32, num_workers=1,
                    multiprocessing_context="spawn")
total = sum(batch.sum().item() for batch in loader)
print(f"sum of squares: {total:.0f}")
'''


def run_cells(cells, folder):
    """Execute `cells` in a fresh kernel started in `folder`; print the outputs, return the errors."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = NotebookClient(notebook, timeout=60, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": folder}})
    try:  # the kernel's own stderr stays ours: it is the terminal behind the notebook
        client.execute()
    except NoSuchKernel:
        cannot_run("no 'python3' Jupyter kernel here: `pip install ipykernel` (or `make setup`)")
    errors = []
    print("--- what the notebook shows ---")
    for cell in notebook.cells:
        for output in cell.outputs:
            if output.output_type == "stream":
                print(output.text, end="")
            elif output.output_type == "error":
                errors.append(f"{output.ename}: {output.evalue}")
                print(errors[-1])
    return errors


def main():
    with tempfile.TemporaryDirectory() as folder:
        # BUG: the class lives in the kernel's __main__, which has no file that a
        # spawned worker could import to look it up when it unpickles the dataset.
        errors = run_cells([SETUP_CELL, DATASET_CELL, TRAIN_CELL], folder)
    if errors:
        sys.exit(f"the notebook cell failed with {errors[-1]}")


if __name__ == "__main__":
    main()
