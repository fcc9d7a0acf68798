"""Unit tests for fixes/memory_budget.py (scenario 10)."""
import pytest
import torch
from torch.utils.data import DataLoader, Dataset

from fixes import memory_budget, shm_budget
from fixes.memory_budget import MemoryBudgetError, plan_for_memory, predicted_peak_bytes
from fixes.shm_budget import MIB, PAGE, ShmBudgetError


class Crops(Dataset):
    """Each sample: a 1 MiB float32 image and a label tensor: batches of 8 are 8 MiB + a page."""

    def __len__(self):
        return 64

    def __getitem__(self, index):
        return torch.full((4, 256, 256), float(index)), torch.tensor(index % 3)


BATCH = 8 * MIB + PAGE


@pytest.fixture(autouse=True)
def plenty_of_shm(monkeypatch):
    monkeypatch.setattr(shm_budget, "shm_free_bytes", lambda shm_dir="/dev/shm": 10_000 * MIB)


def test_prediction_counts_batches_in_shm_and_each_workers_own():
    # (2 x 4 + 3) batches in /dev/shm, and per worker 20 MiB plus the batch it collates.
    assert predicted_peak_bytes(MIB, 2, 4, worker_overhead_mb=20) == 11 * MIB + 2 * (20 * MIB + MIB)
    assert predicted_peak_bytes(MIB, 1, 1, worker_overhead_mb=0) == 5 * MIB


def test_plan_keeps_settings_that_fit():
    plan = plan_for_memory(Crops(), 8, budget_mb=10_000, num_workers=2, prefetch_factor=4)
    assert plan.loader_kwargs() == {"num_workers": 2, "prefetch_factor": 4}
    assert plan.batch_bytes == BATCH
    assert plan.predicted_bytes == predicted_peak_bytes(BATCH, 2, 4)
    assert "asked for" not in str(plan)


def test_plan_lowers_prefetch_before_workers():
    # 2 workers x 2: 7 batches + 2 x (20 MiB + a batch) = 9 batches + 40 MiB, about 112 MiB.
    budget_mb = (predicted_peak_bytes(BATCH, 2, 2) + MIB) / MIB / 0.9
    plan = plan_for_memory(Crops(), 8, budget_mb=budget_mb, num_workers=2, prefetch_factor=8)
    assert plan.loader_kwargs() == {"num_workers": 2, "prefetch_factor": 2}
    assert plan.predicted_bytes <= budget_mb * MIB * 0.9
    assert "asked for 2 x 8" in str(plan)


def test_plan_lowers_workers_when_prefetch_1_is_not_enough():
    budget_mb = (predicted_peak_bytes(BATCH, 2, 1) - MIB) / MIB / 0.9
    plan = plan_for_memory(Crops(), 8, budget_mb=budget_mb, num_workers=2, prefetch_factor=8)
    assert plan.num_workers == 1
    assert plan.predicted_bytes <= budget_mb * MIB * 0.9


def test_plan_also_keeps_the_batches_within_free_shm(monkeypatch):
    monkeypatch.setattr(shm_budget, "shm_free_bytes", lambda shm_dir="/dev/shm": 60 * MIB)
    plan = plan_for_memory(Crops(), 8, budget_mb=10_000, num_workers=2, prefetch_factor=8)
    # 2 workers x 2 = 6 batches = 48 MiB <= 90 % of 60 MiB; 2 x 3 = 64 MiB is not.
    assert plan.loader_kwargs() == {"num_workers": 2, "prefetch_factor": 2}


def test_plan_refuses_with_the_figures_and_the_remedies():
    with pytest.raises(MemoryBudgetError) as refused:
        plan_for_memory(Crops(), 8, budget_mb=30, num_workers=2, prefetch_factor=2)
    message = str(refused.value)
    for needed in ("8.0 MiB do not fit a 30 MiB budget", "prefetch_factor=1", "smaller batch_size",
                   "num_workers=0", "--memory"):
        assert needed in message


def test_plan_passes_on_the_shm_refusal(monkeypatch):
    monkeypatch.setattr(shm_budget, "shm_free_bytes", lambda shm_dir="/dev/shm": 4 * MIB)
    with pytest.raises(ShmBudgetError):
        plan_for_memory(Crops(), 8, budget_mb=10_000, num_workers=2, prefetch_factor=2)
