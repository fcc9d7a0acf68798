"""Unit tests for fixes/memory_in_flight.py (scenarios 04 and 10)."""
import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset

from fixes import memory_in_flight
from fixes.memory_in_flight import (MIB, PAGE, InFlightBudgetError, InFlightPlan, batch_nbytes,
                                    batches_in_flight, plan_in_flight, predicted_peak_bytes)


class Crops(Dataset):
    """Each sample: a 64 KiB float32 image and a label tensor: batches of 8 are 0.5 MiB + a page."""

    def __len__(self):
        return 40

    def __getitem__(self, index):
        return torch.full((4, 64, 64), float(index)), torch.tensor(index % 3)


BATCH = 8 * 64 * 1024 + PAGE


def free_shm(monkeypatch, mib):
    monkeypatch.setattr(memory_in_flight, "shm_free_bytes", lambda shm_dir="/dev/shm": int(mib * MIB))


@pytest.fixture
def plenty_of_shm(monkeypatch):
    free_shm(monkeypatch, 100_000)


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


def test_in_flight_is_the_prefetched_batches_plus_the_one_handed_over_and_the_one_held():
    assert batches_in_flight(2, 4) == 10
    assert batches_in_flight(1, 8) == 10
    assert batches_in_flight(1, 1) == 3


def test_predicted_peak_is_the_batches_in_flight_and_each_workers_own():
    # (2 x 4 + 2) batches, and per worker 20 MiB plus the samples of the batch it collates.
    assert predicted_peak_bytes(MIB, 2, 4, worker_overhead_mb=20) == 10 * MIB + 2 * (20 * MIB + MIB)
    assert predicted_peak_bytes(MIB, 1, 1, worker_overhead_mb=0) == 4 * MIB


def test_plan_keeps_the_settings_that_fit(plenty_of_shm):
    plan = plan_in_flight(Crops(), 8, num_workers=4, prefetch_factor=2, memory_budget_mb=10_000)
    assert plan.loader_kwargs() == {"num_workers": 4, "prefetch_factor": 2}
    assert plan.batch_bytes == BATCH
    assert plan.shm_bytes == 10 * BATCH
    assert plan.predicted_bytes == predicted_peak_bytes(BATCH, 4, 2)
    assert "asked for" not in str(plan)


def test_shm_plan_lowers_prefetch_before_workers(monkeypatch):
    free_shm(monkeypatch, 4 * BATCH / MIB / 0.9 + 0.01)  # room for exactly 4 batches
    plan = plan_in_flight(Crops(), 8, num_workers=2, prefetch_factor=4)
    assert (plan.num_workers, plan.prefetch_factor) == (2, 1)
    assert plan.shm_bytes == 4 * BATCH
    assert "asked for 2 x 4 = 10 batches" in str(plan)


def test_shm_plan_lowers_workers_when_prefetch_1_is_not_enough(monkeypatch):
    free_shm(monkeypatch, 3.5 * BATCH / MIB / 0.9)
    plan = plan_in_flight(Crops(), 8, num_workers=4, prefetch_factor=2)
    assert (plan.num_workers, plan.prefetch_factor) == (1, 1)


def test_memory_plan_lowers_prefetch_before_workers(plenty_of_shm):
    budget_mb = (predicted_peak_bytes(BATCH, 2, 2) + PAGE) / MIB / 0.9
    plan = plan_in_flight(Crops(), 8, num_workers=2, prefetch_factor=8, memory_budget_mb=budget_mb)
    assert plan.loader_kwargs() == {"num_workers": 2, "prefetch_factor": 2}
    assert plan.predicted_bytes <= budget_mb * MIB * 0.9
    assert "asked for 2 x 8 = 18 batches" in str(plan) and "MiB predicted" in str(plan)


def test_memory_plan_lowers_workers_when_prefetch_1_is_not_enough(plenty_of_shm):
    budget_mb = (predicted_peak_bytes(BATCH, 2, 1) - PAGE) / MIB / 0.9
    plan = plan_in_flight(Crops(), 8, num_workers=2, prefetch_factor=8, memory_budget_mb=budget_mb)
    assert plan.num_workers == 1
    assert plan.predicted_bytes <= budget_mb * MIB * 0.9


def test_with_a_budget_the_batches_must_still_fit_the_free_shm(monkeypatch):
    free_shm(monkeypatch, 6 * BATCH / MIB / 0.9 + 0.01)  # room for 6 batches: 2 x 2 + 2
    plan = plan_in_flight(Crops(), 8, num_workers=2, prefetch_factor=8, memory_budget_mb=100_000)
    assert plan.loader_kwargs() == {"num_workers": 2, "prefetch_factor": 2}


def test_shm_refusal_names_the_figures_and_the_remedies(monkeypatch):
    free_shm(monkeypatch, 1)
    with pytest.raises(InFlightBudgetError) as refused:
        plan_in_flight(Crops(), 8, num_workers=2, prefetch_factor=2)
    message = str(refused.value)
    for needed in ("0.5 MiB do not fit in /dev/shm", "1.0 MiB is free", "3 batches", "--shm-size",
                   "--ipc=host", "smaller batch_size", "num_workers=0"):
        assert needed in message, needed
    assert "memory budget" not in message and "--memory" not in message


def test_memory_refusal_names_the_figures_and_the_remedies(plenty_of_shm):
    with pytest.raises(InFlightBudgetError) as refused:
        plan_in_flight(Crops(), 8, num_workers=2, prefetch_factor=2, memory_budget_mb=15)
    message = str(refused.value)
    for needed in ("0.5 MiB do not fit a 15 MiB memory budget", "predicted at 22 MiB", "--memory",
                   "smaller batch_size", "num_workers=0"):
        assert needed in message, needed
    assert "--shm-size" not in message


def test_plan_measures_through_the_given_collate_fn_and_indices(plenty_of_shm):
    def images_only(samples):
        return torch.stack([image for image, _ in samples])

    plan = plan_in_flight(Crops(), 8, num_workers=1, collate_fn=images_only)
    assert plan.batch_bytes == 8 * 64 * 1024
    plan = plan_in_flight(Crops(), 8, num_workers=1, collate_fn=images_only, sample_indices=[0, 1])
    assert plan.batch_bytes == 2 * 64 * 1024


def test_plan_rejects_what_it_cannot_measure():
    with pytest.raises(ValueError, match="num_workers=0 holds one batch"):
        plan_in_flight(Crops(), 8, num_workers=0)

    class Stream(IterableDataset):
        def __iter__(self):
            yield torch.zeros(1)

    with pytest.raises(TypeError, match="IterableDataset"):
        plan_in_flight(Stream(), 8, num_workers=2)


def test_oracle_planned_loader_with_workers_yields_what_num_workers_0_yields(monkeypatch):
    free_shm(monkeypatch, 4 * BATCH / MIB / 0.9 + 0.01)
    plan = plan_in_flight(Crops(), 8, num_workers=2, prefetch_factor=4)
    assert plan.prefetch_factor == 1  # the reduced settings are what is checked
    with_workers = list(DataLoader(Crops(), batch_size=8, **plan.loader_kwargs(),
                                   multiprocessing_context="fork"))
    in_process = list(DataLoader(Crops(), batch_size=8, num_workers=0))
    assert len(with_workers) == len(in_process) == 5
    for (images, labels), (want_images, want_labels) in zip(with_workers, in_process):
        assert torch.equal(images, want_images) and torch.equal(labels, want_labels)


def test_plan_str_names_the_figures():
    plan = InFlightPlan(2, 1, batch_bytes=3 * MIB, free_shm_bytes=16 * MIB, requested=(2, 4))
    assert str(plan) == ("in flight: 2 workers x prefetch_factor 1 + 2 = 4 batches of 3.00 MiB = 12.0 MiB "
                         "in /dev/shm (16.0 MiB free); asked for 2 x 4 = 10 batches, 30.0 MiB")
    budgeted = InFlightPlan(2, 3, batch_bytes=6 * MIB, free_shm_bytes=1000 * MIB, requested=(2, 16),
                            budget_bytes=128 * MIB)
    assert str(budgeted) == ("in flight: 2 workers x prefetch_factor 3 + 2 = 8 batches of 6.00 MiB = 48.0 MiB "
                             "in /dev/shm (1000.0 MiB free), 100 MiB predicted with the workers' own "
                             "(budget 128 MiB); asked for 2 x 16 = 34 batches, 256 MiB predicted")


class Hoarding(Crops):
    """Each worker keeps 40 MiB of its own once it has read a sample (a cache, a decoder's buffers)."""

    def __getitem__(self, index):
        if not hasattr(self, "hoard"):
            self.hoard = b"\x01" * (40 * MIB)  # written byte by byte: the pages are the worker's own
        return super().__getitem__(index)


def test_measured_worker_overhead_is_what_a_real_worker_adds():
    plain = memory_in_flight.measure_worker_overhead_mb(Crops(), multiprocessing_context="fork")
    hoarding = memory_in_flight.measure_worker_overhead_mb(Hoarding(), multiprocessing_context="fork")
    # a forked torch worker copies some megabytes of the parent's heap; the reading adds a 5 MiB margin
    assert 4 <= plain <= 100, plain
    assert plain == int(plain)  # whole MiB, rounded up
    assert hoarding - plain >= 38, (plain, hoarding)
