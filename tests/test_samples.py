"""One fingerprint of a sample (scenarios/clinic/samples.py): the grader and the doctor count scenario
13's repeated samples alike, on the scenario's own stream read by real workers."""
import pytest
import torch
from torch.utils.data import DataLoader

from conftest import load_scenario_module
from scenarios.clinic.doctor import fingerprints as doctor_side
from scenarios.clinic.doctor.checks import s13_iterable_dataset_duplicates as s13
from scenarios.clinic.run import fingerprints as grader_side
from scenarios.clinic.run.observed import delivered
from scenarios.clinic.samples import sample_fingerprints

FOLDER = "13_iterable_dataset_duplicates"


def test_there_is_one_fingerprint_of_a_sample():
    assert grader_side.sample_fingerprints is doctor_side.sample_fingerprints is sample_fingerprints


@pytest.mark.parametrize("variant, workers, repeats", [("broken", 2, 30), ("fixed", 2, 0)])
def test_the_grader_and_the_doctor_count_13s_repeats_the_same(tmp_path, variant, workers, repeats):
    script = load_scenario_module(FOLDER, variant)
    shards = load_scenario_module(FOLDER, "_shard_files")
    dataset = script.ShardStream(shards.write_shards(str(tmp_path)))
    batches = [batch for batch in DataLoader(dataset, num_workers=workers, batch_size=3,
                                              multiprocessing_context="fork", timeout=60)]
    records = [{"pid": 1, "lid": 1, "epoch": 0, "workers": workers, "fp": grader_side.sample_fingerprints(batch)}
               for batch in batches]
    graded = delivered(records)["repeated_samples"]
    doctored = s13._repeats([h for batch in batches for h in doctor_side.sample_fingerprints(batch)])
    assert graded == doctored == repeats


def test_a_batch_without_tensors_is_fingerprinted_by_item():
    prints = sample_fingerprints(["a line", "another", "a line"])
    assert len(prints) == 3 and prints[0] == prints[2] != prints[1]
    assert sample_fingerprints({"ids": torch.arange(4), "text": ["w"] * 4}) == \
        sample_fingerprints({"ids": torch.arange(4), "text": ["x"] * 4})  # the tensors' rows are the samples
    assert len(set(sample_fingerprints(torch.arange(8, dtype=torch.bfloat16).reshape(4, 2)))) == 4
