"""One observer of a DataLoader and one fingerprint of a sample (scenarios/clinic/observer.py,
samples.py): the grader's hook and the doctor's probe watch a loader through the same observer, so
they count waits, workers and scenario 13's repeated samples alike, on real workers."""
import gc
import os
import weakref

import pytest
import torch
from torch.utils.data import DataLoader, dataloader

from conftest import load_scenario_module
from scenarios.clinic.doctor import probe_child
from scenarios.clinic.doctor.checks import s13_iterable_dataset_duplicates as s13
from scenarios.clinic.observer import Observer
from scenarios.clinic.run import loop_hook
from scenarios.clinic.run.observed import delivered
from scenarios.clinic.samples import sample_fingerprints

FOLDER = "13_iterable_dataset_duplicates"


def watched(loader) -> list:
    """Every batch of one epoch through the observer: (batch, delivery) pairs."""
    iterator = iter(loader)
    observer, seen = Observer(), []
    while True:
        try:
            observer.deliver(iterator, iterator.__next__, lambda batch, delivery: seen.append((batch, delivery)))
        except StopIteration:
            return seen


def test_the_grader_and_the_doctor_watch_through_one_observer():
    assert loop_hook.Observer is probe_child.Observer is Observer
    assert Observer.fingerprints(torch.arange(4)) == sample_fingerprints(torch.arange(4))


def test_the_observer_names_the_worker_of_each_batch_and_times_the_loop():
    loader = DataLoader(torch.arange(40.0), batch_size=4, num_workers=2, multiprocessing_context="fork", timeout=60)
    seen = watched(loader)
    assert [d.n for _, d in seen] == list(range(1, 11))
    assert [d.worker for _, d in seen] == [0, 1] * 5  # PyTorch hands index batches to its workers in turn
    assert seen[0][1].step_s is None and all(d.step_s >= 0 and d.cpu_s >= 0 for _, d in seen[1:])
    assert sum(d.samples for _, d in seen) == 40 and all(d.waited_s >= 0 for _, d in seen)
    alone = watched(DataLoader(torch.arange(8.0), batch_size=4))
    assert [d.worker for _, d in alone] == [None, None]


def test_the_watchers_work_is_not_counted_as_the_loops_and_its_error_is_its_own():
    iterator = iter(DataLoader(torch.arange(12.0), batch_size=4))
    observer = Observer()
    own_work = lambda batch, delivery: sum(range(3_000_000))  # noqa: E731  (the watcher's, not the loop's)
    observer.deliver(iterator, iterator.__next__, own_work)
    observer.deliver(iterator, iterator.__next__)
    assert observer.batches == 2 and observer.step_s < 0.02 and observer.samples == 8

    def fails(batch, delivery):
        raise ValueError("the watcher's")
    with pytest.raises(ValueError, match="the watcher's"):
        observer.deliver(iterator, iterator.__next__, fails)


def test_an_odd_batch_is_still_delivered_and_a_forked_process_counts_its_own():
    class Odd:
        shape = property(lambda self: 1 / 0)  # its samples cannot be counted: the loop still gets it

    iterator = iter([Odd(), 1, 2])
    observer, seen = Observer(), []
    odd = observer.deliver(iterator, iterator.__next__, lambda batch, delivery: seen.append(delivery))
    assert isinstance(odd, Odd) and observer.batches == 1 and seen[0].samples == 1
    observer.deliver(iterator, iterator.__next__)
    observer.pid = os.getpid() + 1  # as an iterator a forked child inherited finds it
    observer.deliver(iterator, iterator.__next__)
    assert observer.batches == 1 and observer.pid == os.getpid()


def test_a_hooked_iterator_the_loop_drops_is_freed_at_once_with_its_workers(monkeypatch):
    """The hook's observer holds no reference to the iterator that holds it: a loop that drops its
    iterator mid-epoch ends its workers then, as without the hook, not at a later garbage collection."""
    monkeypatch.setattr(DataLoader, "__iter__", loop_hook.watched_iter(DataLoader.__iter__))
    monkeypatch.setattr(dataloader._BaseDataLoaderIter, "__next__",
                        loop_hook.watched_next(dataloader._BaseDataLoaderIter.__next__))
    loader = DataLoader(torch.arange(64.0), batch_size=4, num_workers=2, multiprocessing_context="fork", timeout=60)
    iterator = iter(loader)
    next(iterator)
    workers, dropped = [w for w in iterator._workers], weakref.ref(iterator)
    assert iterator._clinic_seen.batches == 1
    gc.disable()
    try:
        del iterator
        assert dropped() is None
        for worker in workers:
            worker.join(timeout=30)
        assert not any(worker.is_alive() for worker in workers)
    finally:
        gc.enable()


@pytest.mark.parametrize("variant, workers, repeats", [("broken", 2, 30), ("fixed", 2, 0)])
def test_the_grader_and_the_doctor_count_13s_repeats_the_same(tmp_path, variant, workers, repeats):
    script = load_scenario_module(FOLDER, variant)
    shards = load_scenario_module(FOLDER, "_shard_files")
    dataset = script.ShardStream(shards.write_shards(str(tmp_path)))
    seen = watched(DataLoader(dataset, num_workers=workers, batch_size=3, multiprocessing_context="fork", timeout=60))
    records = [{"pid": 1, "lid": 1, "epoch": 0, "workers": workers, "worker": d.worker,
                "fp": Observer.fingerprints(batch)} for batch, d in seen]
    graded = delivered(records)["repeated_samples"]
    doctored = s13._repeats([h for record in records for h in record["fp"]])
    assert graded == doctored == repeats
    assert {record["worker"] for record in records} == set(range(workers))


def test_a_batch_without_tensors_is_fingerprinted_by_item():
    prints = sample_fingerprints(["a line", "another", "a line"])
    assert len(prints) == 3 and prints[0] == prints[2] != prints[1]
    # every field is the sample, tensors or not (a caption emptied so that a sample crosses is another sample)
    assert sample_fingerprints({"ids": torch.arange(4), "text": ["w"] * 4}) != \
        sample_fingerprints({"ids": torch.arange(4), "text": ["x"] * 4})
    fields = []
    sample_fingerprints({"ids": torch.arange(4), "text": ["w"] * 4}, fields)
    assert [len(set(field)) for field in fields] == [4, 1]
    assert len(set(sample_fingerprints(torch.arange(8, dtype=torch.bfloat16).reshape(4, 2)))) == 4
