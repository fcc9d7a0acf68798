"""Scenario 09, fixed_notebook: the notebook imports its Dataset class from a .py file.

    python scenarios/09_spawn_pitfalls/fixed_notebook.py

Expect: the same training cell prints the sum of squares.  A spawned worker
unpickles `squares_dataset.SquaresDataset` by importing that module.
"""
import sys
import tempfile
from pathlib import Path

from broken_notebook import DATASET_CELL, SETUP_CELL, TRAIN_CELL, run_cells


def main():
    with tempfile.TemporaryDirectory() as folder:
        # FIX: the class goes into a module next to the notebook, which workers can import.
        Path(folder, "squares_dataset.py").write_text(SETUP_CELL + DATASET_CELL)
        import_cell = "from squares_dataset import SquaresDataset"
        errors = run_cells([SETUP_CELL, import_cell, TRAIN_CELL], folder)
    if errors:
        sys.exit(f"the notebook cell failed with {errors[-1]}")


if __name__ == "__main__":
    main()
