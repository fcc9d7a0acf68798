"""fixes.packed_records.PackedRecords: a list-like, fork-friendly record store."""
import pickle

import numpy as np
import psutil
import pytest
import torch
from torch.utils.data import DataLoader

from fixes.packed_records import PackedRecords
from scenarios.synthetic_data import detection_annotations

RECORDS = [{"file": "a.jpg", "boxes": [[1.0, 2.0, 3.0, 4.0]]}, ("tuple", 2), None, "text", 7.5,
           {"nested": {"deep": [1, 2]}}]


def test_indexing_returns_equal_copies():
    packed = PackedRecords(RECORDS)
    assert len(packed) == len(RECORDS)
    assert [packed[i] for i in range(len(packed))] == RECORDS
    assert packed[np.int64(1)] == RECORDS[1]
    packed[0]["file"] = "changed"  # each access is a fresh copy
    assert packed[0]["file"] == "a.jpg"


def test_negative_indices_slices_and_iteration_behave_like_a_list():
    packed = PackedRecords(RECORDS)
    assert packed[-1] == RECORDS[-1]
    assert packed[1:5:2] == RECORDS[1:5:2]
    assert packed[::-1] == RECORDS[::-1]
    assert list(packed) == RECORDS
    assert RECORDS[3] in packed


def test_out_of_range_and_wrong_types_fail_like_a_list():
    packed = PackedRecords(RECORDS)
    with pytest.raises(IndexError, match="out of range"):
        packed[len(RECORDS)]
    with pytest.raises(IndexError):
        packed[-len(RECORDS) - 1]
    with pytest.raises(TypeError, match="integers or slices"):
        packed["0"]


def test_empty_store():
    packed = PackedRecords([])
    assert len(packed) == 0 and list(packed) == []


def test_pickles_for_spawned_workers():
    packed = PackedRecords(RECORDS)
    assert list(pickle.loads(pickle.dumps(packed))) == RECORDS


def test_many_records_take_a_fraction_of_the_list_memory():
    records = detection_annotations(50_000)
    process = psutil.Process()
    before = process.memory_info().rss
    packed = PackedRecords(records)
    packed_growth = process.memory_info().rss - before
    assert packed.nbytes < 20 * 2**20          # ~1.6 million Python objects in under 20 MB
    assert packed_growth < 3 * packed.nbytes   # the pickles themselves are freed
    assert packed[12_345] == records[12_345]


class _Boxes(torch.utils.data.Dataset):
    def __init__(self, records):
        self.records = records

    def __len__(self):
        return len(self.records)

    def __getitem__(self, index):
        return torch.tensor(self.records[index]["boxes"][0])


def test_forked_workers_yield_what_a_single_process_yields():
    packed = PackedRecords(detection_annotations(2_000))
    single = torch.cat(list(DataLoader(_Boxes(packed), batch_size=64)))
    forked = torch.cat(list(DataLoader(_Boxes(packed), batch_size=64, num_workers=2,
                                       multiprocessing_context="fork")))
    assert torch.equal(single, forked)


def test_reads_go_through_memoryviews_that_are_remade_not_pickled():
    packed = PackedRecords(RECORDS)
    assert set(packed.__getstate__()) == {"_offsets", "_buffer"}  # a memoryview cannot be pickled
    copy = pickle.loads(pickle.dumps(packed))
    assert isinstance(copy._bytes, memoryview) and copy[0] == RECORDS[0]
    assert packed[np.int32(-1)] == RECORDS[-1] and packed[True] == RECORDS[1]  # like a list
