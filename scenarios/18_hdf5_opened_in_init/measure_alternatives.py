"""Scenario 18, measured: the other ways out, their speed, and where an inherited handle is safe.

    python scenarios/18_hdf5_opened_in_init/measure_alternatives.py

Same file, same epoch as broken.py and fixed.py.  Prints, as metric lines:
  * samples/s of one epoch (from its first batch on) read three ways:
    num_workers=0 (one handle, main process only), two workers that open the
    file in every __getitem__, and two workers with a handle each (fixed.py),
    and the CPU time each way spends per sample in the process that reads it
    (unlike samples/s, hardly moved by other load on the machine);
  * wrong samples and errors when the inherited handle is opened with a path
    instead of a file object: h5py's default driver reads by position (pread),
    so nothing is shared to race on;
  * broken.py's handle on an uncompressed, contiguous copy of the data: raw
    pixels carry no signature and no checksum, so wrong bytes pass silently
    (a count, not judged: it varies from run to run);
  * what Python 3.14's default start method (forkserver) makes of broken.py's
    dataset: it must be pickled, and an h5py.File cannot be.
"""
import pickle
import tempfile
import time
from pathlib import Path

import h5py
import torch
from torch.utils.data import DataLoader, Dataset

import broken
import fixed
from _hdf5_file import SAMPLES, write_samples


class OpenEveryItem(broken.HDF5Images):
    def __init__(self, path):
        self.path = path

    def __getitem__(self, index):
        with broken.open_hdf5(self.path) as file:  # metadata read again for every sample
            return index, torch.from_numpy(file["images"][index])


class OpenedWithPath(broken.HDF5Images):
    def __init__(self, path):
        self.file = h5py.File(path, "r")  # inherited by the workers, as in broken.py


class CpuTimed(Dataset):
    """The wrapped dataset's samples, each with the CPU seconds its process spent making it."""
    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        started = time.process_time()  # CPU time of this process only: other load does not count
        index, image = self.dataset[index]
        return index, image, time.process_time() - started


def read_epoch(dataset, num_workers):
    """Samples/s from the first batch to the last (worker start not counted), the samples,
    and the CPU microseconds spent per sample in whichever process read it."""
    options = {"multiprocessing_context": "fork"} if num_workers else {}
    loader = DataLoader(CpuTimed(dataset), batch_size=32, shuffle=True, num_workers=num_workers,
                        generator=torch.Generator().manual_seed(0), **options)
    seen, cpu_s, started = {}, 0.0, None
    for indices, images, seconds in loader:
        if started is None:
            started, first = time.perf_counter(), len(indices)
        seen.update(zip(indices.tolist(), images))
        cpu_s += seconds.sum().item()
    rate = (len(seen) - first) / (time.perf_counter() - started)
    return rate, seen, cpu_s / len(seen) * 1e6


def main():
    with tempfile.TemporaryDirectory() as folder:
        path = write_samples(Path(folder) / "train.h5")

        oracle, rates, cpu_us = None, {}, {}
        for name, dataset, workers in (("num_workers_0", fixed.HDF5Images(path), 0),
                                       ("open_every_item", OpenEveryItem(path), 2),
                                       ("per_worker", fixed.HDF5Images(path), 2)):
            rates[name], seen, cpu_us[name] = read_epoch(dataset, workers)
            oracle = oracle or seen  # the first, num_workers=0, is the oracle the others must equal
            assert all(torch.equal(seen[i], oracle[i]) for i in oracle), name
            print(f"metric samples_per_s_{name}={rates[name]:.0f}")
            print(f"metric cpu_us_per_sample_{name}={cpu_us[name]:.0f}")
        print(f"metric per_worker_vs_open_every_item={rates['per_worker'] / rates['open_every_item']:.2f}")
        print(f"metric per_worker_vs_num_workers_0={rates['per_worker'] / rates['num_workers_0']:.2f}")
        print(f"metric open_every_item_cpu_vs_per_worker={cpu_us['open_every_item'] / cpu_us['per_worker']:.2f}")

        inherited = OpenedWithPath(path)
        seen = broken.one_epoch(inherited, num_workers=2)
        wrong = sum(not torch.equal(seen[i], oracle[i]) for i in oracle)
        print(f"metric path_handle_wrong_samples={wrong}")
        print(f"inherited handle opened with a path: {wrong} of {SAMPLES} samples wrong, no error")

        raw = broken.HDF5Images(write_samples(Path(folder) / "raw.h5", compressed=False))
        oracle_raw = broken.one_epoch(raw, num_workers=0)
        try:
            seen = broken.one_epoch(raw, num_workers=2)
            wrong = sum(not torch.equal(seen[i], oracle_raw[i]) for i in oracle_raw)
            print(f"metric uncompressed_wrong_samples={wrong}")
            print(f"broken.py's handle, uncompressed file: {wrong} of {SAMPLES} samples wrong, no error")
        except Exception as err:  # h5py may also trip on a metadata read: report, do not judge
            print(f"broken.py's handle, uncompressed file: {type(err).__name__} from a worker")

        loader = DataLoader(broken.HDF5Images(path), num_workers=2, multiprocessing_context="forkserver")
        try:
            iter(loader)
            print("forkserver: the workers started")
        except TypeError as err:  # raised in the main process, while sending the dataset
            print(f"forkserver: {type(err).__name__}: {err}")
        print(f"forkserver: fixed.py's dataset pickles to {len(pickle.dumps(fixed.HDF5Images(path)))} bytes")


if __name__ == "__main__":
    main()
