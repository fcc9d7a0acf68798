"""check_spawn_safe names what spawned workers could not receive (scenario 09)."""
import functools
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from conftest import REPO_ROOT
from fixes.spawn_safe import SpawnSafetyError, check_spawn_safe


class Shifted(Dataset):
    def __init__(self, transform=None, data=None):
        self.data = torch.arange(8.0) if data is None else data
        self.transform = transform

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        value = self.data[index]
        return self.transform(value) if self.transform else value


def shift(value, by):
    return value + by


def _loader(dataset, **kwargs):
    return DataLoader(dataset, num_workers=2, multiprocessing_context="spawn", **kwargs)


def test_a_lambda_transform_is_named_by_its_attribute_path():
    by = 3
    with pytest.raises(SpawnSafetyError) as caught:
        check_spawn_safe(_loader(Shifted(transform=lambda v: v + by)))
    message = str(caught.value)
    assert message.startswith("loader.dataset.transform (")
    assert "<lambda>" in message and "Can't pickle local object" in message
    assert "functools.partial" in message  # says what to do


def test_a_local_collate_fn_and_a_nested_local_class_are_found():
    def collate(batch):
        return batch

    with pytest.raises(SpawnSafetyError, match=r"^loader\.collate_fn \(.*collate\)"):
        check_spawn_safe(_loader(Shifted(), collate_fn=collate))

    class Local:
        pass

    with pytest.raises(SpawnSafetyError, match=r"^config\['stages'\]\[1\] \("):
        check_spawn_safe({"stages": [1, Local()]}, name="config")


def test_a_lock_held_by_the_dataset_is_named():
    dataset = Shifted()
    dataset.cache_lock = threading.Lock()
    with pytest.raises(SpawnSafetyError, match=r"^loader\.dataset\.cache_lock \(lock\).*inside the worker"):
        check_spawn_safe(_loader(dataset))


def test_top_level_functions_partials_and_bulk_data_pass():
    big = torch.zeros(50_000_000, dtype=torch.uint8)  # 50 MB: must not be copied to be checked
    dataset = Shifted(transform=functools.partial(shift, by=3), data=big)
    dataset.table = np.zeros((1000, 1000))
    assert check_spawn_safe(_loader(dataset, worker_init_fn=functools.partial(shift, by=1))) is None
    assert big.is_shared() is False  # checking it did not move it to shared memory


def test_a_class_from_an_interactive_main_is_reported(tmp_path):
    code = textwrap.dedent("""
        from fixes.spawn_safe import check_spawn_safe
        class SquaresDataset:
            pass
        check_spawn_safe([SquaresDataset()], name="cells")
    """)
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)))
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert "cells uses SquaresDataset, which is defined in an interactive __main__" in last
    assert "Move it into a .py module" in last


def test_a_class_defined_under_the_main_guard_is_reported_and_top_level_is_not(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""
        from fixes.spawn_safe import check_spawn_safe

        class TopLevel:
            pass

        if __name__ == "__main__":
            class Guarded:
                pass
            check_spawn_safe(TopLevel())
            print("top level ok")
            check_spawn_safe(Guarded())
    """))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)))
    assert done.stdout.strip() == "top level ok"
    assert done.returncode == 1
    assert "Guarded, which is defined inside `if __name__ == \"__main__\":`" in done.stderr
    assert "Define it at the top level" in done.stderr


class Counted:
    def __init__(self, lock, total):
        self.lock, self.total = lock, total


def test_multiprocessing_objects_are_judged_as_a_worker_start_would_send_them():
    # Made with the loader's own start method, a Lock or Value reaches spawn/forkserver workers
    # (scenario 05's fix on Python 3.14); a Lock of the fork context does not, with Python's words.
    import multiprocessing
    forkserver = multiprocessing.get_context("forkserver")
    check_spawn_safe(Counted(forkserver.Lock(), forkserver.Value("i", 0)), "dataset")
    with pytest.raises(SpawnSafetyError, match="A SemLock created in a fork context is being shared"):
        check_spawn_safe(Counted(multiprocessing.get_context("fork").Lock(), 0), "dataset")
    with pytest.raises(SpawnSafetyError, match=r"dataset.lock \(lock\).*cannot pickle '_thread.lock'"):
        check_spawn_safe(Counted(threading.Lock(), 0), "dataset")
