"""Scenario 12: what the runs show beyond their declarations (tests/test_scenarios.py checks
those): the workers' draws are copies of one another, the same under spawn as under fork, the
global np.random is not, and the fixed loader still crops with the draws it reports."""
import re

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, get_worker_info

from conftest import load_scenario_module, scenario_report

FOLDER = "12_identical_augmentations"
FIRST_DRAW = re.compile(r"^epoch (\d) batch (\d): first sample (.+)$", re.M)


@pytest.fixture(scope="module")
def report():
    return scenario_report("12")


def first_draws(run):
    """{(epoch, batch): 'cropped at (t, l), flip=f, brightness xb'} from a variant's output."""
    return {(int(e), int(b)): text for e, b, text in FIRST_DRAW.findall(run["output_tail"])}


def test_broken_workers_draw_copies_of_one_stream_every_epoch(report):
    broken = report["variants"]["broken"]
    draws = first_draws(broken)
    assert len(draws) == 4 and len(set(draws.values())) == 1, draws
    # Two workers, 128 images: each of the 64 distinct draws is made once by each worker.
    assert broken["metrics"]["distinct_draws"] == 128 // 2


def test_fixed_workers_and_epochs_draw_apart(report):
    draws = first_draws(report["variants"]["fixed"])
    assert len(draws) == 4 and len(set(draws.values())) == 4, draws


def test_spawn_unpickles_the_very_state_that_fork_copies(report):
    # default_rng(0) in __init__: spawned workers start from the same numbers as forked ones.
    spawn, broken = first_draws(report["variants"]["myth_spawn"]), first_draws(report["variants"]["broken"])
    assert spawn == {key: broken[key] for key in spawn} and len(spawn) == 2


def test_global_numpy_differs_per_worker_and_per_epoch(report):
    draws = first_draws(report["variants"]["myth_global_numpy"])
    assert len(set(draws.values())) == 4, draws


def draws_and_images(module, num_workers, epochs=1, **loader_options):
    dataset = module.RandomCropFlip(module.IMAGES)
    loader = DataLoader(dataset, batch_size=8, num_workers=num_workers, **loader_options,
                        multiprocessing_context="fork" if num_workers else None)
    return dataset, [(torch.cat([i for i, _ in batches]), torch.cat([p for _, p in batches]))
                     for batches in (list(loader) for _ in range(epochs))]


def test_oracle_fixed_workers_crop_with_their_draws_and_repeat_none_as_num_workers_0():
    fixed = load_scenario_module(FOLDER, "fixed")
    torch.manual_seed(0)
    dataset, [(images, params)] = draws_and_images(fixed, 2, worker_init_fn=fixed.reseed_dataset_generators)
    _, [(_, serial)] = draws_and_images(fixed, 0)
    assert len({tuple(p) for p in params.tolist()}) == len({tuple(p) for p in serial.tolist()}) == fixed.IMAGES
    # Every image is the one the reported draw describes (no shuffle: sample i is image i).
    for index, (top, left, flip, brightness) in enumerate(params.tolist()):
        crop = dataset.images[index, :, int(top):int(top) + fixed.CROP, int(left):int(left) + fixed.CROP]
        assert torch.equal(images[index], (crop.flip(-1) if flip else crop) * brightness)


def test_persistent_workers_stop_the_replay_but_not_the_copies():
    broken = load_scenario_module(FOLDER, "broken")
    _, epochs = draws_and_images(broken, 2, epochs=2, persistent_workers=True)
    first, second = ({tuple(p) for p in params.tolist()} for _, params in epochs)
    assert len(first) == len(second) == broken.IMAGES // 2  # the workers still copy each other
    assert not first & second  # but each goes on with its own copy in the next epoch


def test_the_readme_recipe_without_the_module():
    broken = load_scenario_module(FOLDER, "broken")

    def reseed(worker_id):
        info = get_worker_info()
        info.dataset.rng = np.random.default_rng(info.seed)

    _, [(_, params)] = draws_and_images(broken, 2, worker_init_fn=reseed)
    assert len({tuple(p) for p in params.tolist()}) == broken.IMAGES
