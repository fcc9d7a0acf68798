"""Unit tests for fixes/shm_budget.py (scenario 04)."""
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset

from fixes import shm_budget
from fixes.shm_budget import (MIB, PAGE, ShmBudgetError, ShmPlan, batch_nbytes,
                              batches_in_flight, plan_for_shm)


class Crops(Dataset):
    """Each sample: a 64 KiB float32 image and a label tensor."""

    def __len__(self):
        return 40

    def __getitem__(self, index):
        return torch.full((4, 64, 64), float(index)), torch.tensor(index % 3)


def free_space(monkeypatch, mib):
    monkeypatch.setattr(shm_budget, "shm_free_bytes", lambda shm_dir="/dev/shm": int(mib * MIB))


def test_batch_nbytes_rounds_each_tensor_to_pages_and_walks_containers():
    one_float = torch.zeros(1)
    assert batch_nbytes(one_float) == PAGE
    image = torch.zeros(8, PAGE)  # exactly 32 pages
    assert batch_nbytes(image) == 32 * PAGE
    nested = {"image": image, "extra": [one_float, (np.zeros(10), "name", 3)]}
    assert batch_nbytes(nested) == 32 * PAGE + PAGE + PAGE


def test_batch_nbytes_counts_the_whole_storage_of_a_view():
    base = torch.zeros(4 * PAGE)  # 16 pages of float32
    assert batch_nbytes(base[:1]) == batch_nbytes(base) == 16 * PAGE


def test_in_flight_counts_prefetched_batches_plus_the_two_the_loop_holds():
    assert batches_in_flight(2, 4) == 10
    assert batches_in_flight(1, 1) == 3


def test_plan_keeps_the_settings_that_fit(monkeypatch):
    free_space(monkeypatch, 1000)
    plan = plan_for_shm(Crops(), 8, num_workers=4, prefetch_factor=2)
    assert plan.loader_kwargs() == {"num_workers": 4, "prefetch_factor": 2}
    assert plan.batch_bytes == 8 * 64 * 1024 + PAGE
    assert "asked for" not in str(plan)


def test_plan_lowers_prefetch_before_workers(monkeypatch):
    batch = 8 * 64 * 1024 + PAGE  # 0.5 MiB + a page
    free_space(monkeypatch, 4 * batch / MIB / 0.9 + 0.01)  # room for exactly 4 batches
    plan = plan_for_shm(Crops(), 8, num_workers=2, prefetch_factor=4)
    assert (plan.num_workers, plan.prefetch_factor) == (2, 1)
    assert plan.in_flight_bytes == 4 * batch
    assert "asked for 2 x 4" in str(plan)


def test_plan_lowers_workers_when_prefetch_1_is_not_enough(monkeypatch):
    batch = 8 * 64 * 1024 + PAGE
    free_space(monkeypatch, 3.5 * batch / MIB / 0.9)
    plan = plan_for_shm(Crops(), 8, num_workers=4, prefetch_factor=2)
    assert (plan.num_workers, plan.prefetch_factor) == (1, 1)


def test_plan_refuses_with_the_figures_and_the_remedies(monkeypatch):
    free_space(monkeypatch, 1)
    with pytest.raises(ShmBudgetError) as refused:
        plan_for_shm(Crops(), 8, num_workers=2, prefetch_factor=2)
    message = str(refused.value)
    for needed in ("0.5 MiB", "1.0 MiB is free", "3 batches", "--shm-size", "--ipc=host",
                   "smaller batch_size", "num_workers=0"):
        assert needed in message, needed


def test_plan_measures_through_the_given_collate_fn_and_indices(monkeypatch):
    free_space(monkeypatch, 1000)

    def images_only(samples):
        return torch.stack([image for image, _ in samples])

    plan = plan_for_shm(Crops(), 8, num_workers=1, collate_fn=images_only)
    assert plan.batch_bytes == 8 * 64 * 1024
    plan = plan_for_shm(Crops(), 8, num_workers=1, collate_fn=images_only, sample_indices=[0, 1])
    assert plan.batch_bytes == 2 * 64 * 1024


def test_plan_rejects_what_it_cannot_measure():
    with pytest.raises(ValueError, match="num_workers=0 uses no shared memory"):
        plan_for_shm(Crops(), 8, num_workers=0)

    class Stream(IterableDataset):
        def __iter__(self):
            yield torch.zeros(1)

    with pytest.raises(TypeError, match="IterableDataset"):
        plan_for_shm(Stream(), 8, num_workers=2)


def test_oracle_planned_loader_with_workers_yields_what_num_workers_0_yields(monkeypatch):
    batch = 8 * 64 * 1024 + PAGE
    free_space(monkeypatch, 4 * batch / MIB / 0.9 + 0.01)
    plan = plan_for_shm(Crops(), 8, num_workers=2, prefetch_factor=4)
    assert plan.prefetch_factor == 1  # the reduced settings are what is checked
    with_workers = list(DataLoader(Crops(), batch_size=8, **plan.loader_kwargs(),
                                   multiprocessing_context="fork"))
    in_process = list(DataLoader(Crops(), batch_size=8, num_workers=0))
    assert len(with_workers) == len(in_process) == 5
    for (images, labels), (want_images, want_labels) in zip(with_workers, in_process):
        assert torch.equal(images, want_images) and torch.equal(labels, want_labels)


def test_plan_str_names_the_figures():
    plan = ShmPlan(2, 1, batch_bytes=3 * MIB, free_bytes=16 * MIB,
                   requested_workers=2, requested_prefetch=4)
    assert str(plan) == ("shm budget: 2 workers x prefetch_factor 1 = 12.0 MiB in flight "
                         "(3.00 MiB per batch), 16.0 MiB free in /dev/shm; asked for 2 x 4 = 30.0 MiB")
