"""Scenario 18: what the runs show beyond their declarations (tests/test_scenarios.py checks those):
broken.py's failure is h5py's own error raised in a worker and re-raised by the DataLoader (or,
when h5py stays silent, a count of samples that differ from num_workers=0's); the fixed loader
yields exactly what num_workers=0 yields; a handle per worker beats opening the file per sample;
a path-opened handle is safe on this h5py; forkserver cannot send an h5py.File to a worker."""
import re

import pytest
import torch

from conftest import REPO_ROOT, load_scenario_module, scenario_report

SCENARIO_DIR = REPO_ROOT / "scenarios" / "18_hdf5_opened_in_init"
# HDF5's own words, e.g. "OSError: Can't synchronously read data (filter returned failure during read)".
H5PY_ERROR = re.compile(r"^(OSError|KeyError): '?(Can't synchronously read data|Unable to synchronously open object) "
                        r"\(.+\)'?$", re.M)


@pytest.fixture(scope="module")
def report():
    return scenario_report("18")


def test_broken_fails_in_a_worker_with_h5pys_own_error_or_on_the_oracle_count(report):
    out = report["variants"]["broken"]["output_tail"]
    assert "samples equal what num_workers=0 read" not in out
    caught = re.search(r"^(\w+Error): Caught (\w+Error) in DataLoader worker process [01]\.$", out, re.M)
    if caught:
        # The worker's exception type survives the trip, and its text is h5py's, from inside HDF5.
        assert caught.group(1) == caught.group(2)
        assert re.search(r'h5py/_hl/(dataset|group)\.py", line \d+, in __getitem__', out)
        assert H5PY_ERROR.search(out), out[-2000:]
    else:
        wrong = report["variants"]["broken"]["metrics"]["wrong_samples"]
        assert wrong >= 1


def test_fixed_reads_every_sample_in_workers_as_num_workers_0_does(report):
    out = report["variants"]["fixed"]["output_tail"]
    assert "all 1024 samples equal what num_workers=0 read" in out
    assert "Caught" not in out


def test_a_handle_per_worker_costs_what_the_main_process_pays_and_opening_per_sample_more(report):
    figures = report["variants"]["measure_alternatives"]["metrics"]
    assert figures["samples_per_s_per_worker"] > figures["samples_per_s_open_every_item"]
    # A worker's own handle reads a sample for about the CPU time the main process needs with its own.
    ratio = figures["cpu_us_per_sample_per_worker"] / figures["cpu_us_per_sample_num_workers_0"]
    assert 0.5 < ratio < 2, ratio
    assert figures["cpu_us_per_sample_open_every_item"] > 2 * figures["cpu_us_per_sample_num_workers_0"]


def test_path_opened_handle_is_safe_here_and_forkserver_refuses_the_h5py_file(report):
    out = report["variants"]["measure_alternatives"]["output_tail"]
    assert "inherited handle opened with a path: 0 of 1024 samples wrong, no error" in out
    # broken.py's handle on raw data: reported, either as a silent count or as h5py's error.
    assert re.search(r"^broken\.py's handle, uncompressed file: "
                     r"(\d+ of 1024 samples wrong, no error|\w+ from a worker)$", out, re.M)
    # PyTorch's own hint, then h5py's refusal, both in the main process at iter(loader).
    assert "UserWarning: Got pickle error when attempting to start a worker Process" in out
    assert "forkserver: TypeError: h5py objects cannot be pickled" in out
    assert re.search(r"forkserver: fixed\.py's dataset pickles to \d+ bytes", out)


def test_oracle_fixed_loader_with_workers_yields_what_num_workers_0_yields(tmp_path):
    fixed = load_scenario_module(SCENARIO_DIR.name, "fixed")
    dataset = fixed.HDF5Images(fixed.write_samples(tmp_path / "train.h5", count=256))
    loaders = {workers: torch.utils.data.DataLoader(
        torch.utils.data.Subset(dataset, range(256)), batch_size=32, num_workers=workers,
        **({"multiprocessing_context": "fork"} if workers else {})) for workers in (0, 2)}
    batches = {workers: list(loader) for workers, loader in loaders.items()}
    assert len(batches[0]) == len(batches[2]) == 8
    for (i0, x0), (i2, x2) in zip(batches[0], batches[2]):
        assert torch.equal(i0, i2) and torch.equal(x0, x2)
