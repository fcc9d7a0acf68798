"""Scenario 16: what the runs show beyond their declarations (tests/test_scenarios.py checks
those): the error users paste, and how its text changes without workers and with the
length of a batch's first sample; the padded, masked fix against the oracle of
num_workers=0; what bucketing saves and what batch_size=1 costs."""
import re

import pytest
import torch
from torch.utils.data import DataLoader

from conftest import REPO_ROOT, load_scenario_module, scenario_report
from fixes.pad_collate import LengthBucketBatchSampler, PadCollate

SCENARIO_DIR = REPO_ROOT / "scenarios" / "16_variable_size_samples"
STACK_LINE = re.compile(r"^RuntimeError: stack expects each tensor to be equal size, "
                        r"but got \[(\d+)\] at entry 0 and \[(\d+)\] at entry \d+$", re.M)


@pytest.fixture(scope="module")
def report():
    return scenario_report("16")


def test_broken_shows_the_wrapped_error_users_paste(report):
    out = report["variants"]["broken"]["output_tail"]
    assert re.search(r"^RuntimeError: Caught RuntimeError in DataLoader worker process [01]\.$", out, re.M)
    assert "Original Traceback (most recent call last):" in out
    # Raised in the main process by the wrapper; the real frames are text from the worker.
    assert re.search(r"in reraise\n\s+raise exception", out)
    assert re.search(r"worker\.py\", line \d+, in _worker_loop", out)
    assert "in collate_tensor_fn" in out
    first, other = map(int, STACK_LINE.search(out).groups())
    assert first != other


def test_without_workers_the_same_last_line_comes_unwrapped(report):
    broken = report["variants"]["broken"]["output_tail"]
    serial = report["variants"]["broken_num_workers_0"]["output_tail"]
    # Same data, same shuffle, same first batch: word for word the same last line ...
    assert STACK_LINE.search(serial).group(0) == STACK_LINE.search(broken).group(0)
    # ... but no wrapper: the traceback runs from the loop into default_collate in this process.
    for wrapper in ("Caught RuntimeError", "Original Traceback", "in reraise", "_worker_loop"):
        assert wrapper not in serial, wrapper
    assert "self._dataset_fetcher.fetch(index)" in serial and "in collate_tensor_fn" in serial


def test_in_workers_a_long_first_sample_changes_the_message(report):
    run = report["variants"]["measure_error_messages"]
    figures, out = run["metrics"], run["output_tail"]
    assert figures["worker_stack_errors"] + figures["worker_resize_errors"] == figures["batches"]
    assert figures["main_stack_errors"] == figures["batches"]  # the main process never sees the resize error
    # The genuine text, failing at the shared-memory preallocation, before torch.stack.
    assert re.search(r"out = elem\.new\(storage\)\.resize_\(len\(batch\), \*list\(elem\.size\(\)\)\)\n"
                     r"[\s^]*\nRuntimeError: Trying to resize storage that is not resizable$", out, re.M)


def test_fixed_trains_without_an_error_and_pads_like_the_measurement(report):
    fixed = report["variants"]["fixed"]
    assert "Traceback" not in fixed["output_tail"]
    bucketing = report["variants"]["measure_bucketing"]["metrics"]
    # Same sampler seed, same data: the same batches.
    assert fixed["metrics"]["padded_fraction"] == bucketing["padded_fraction_bucketed"]


def test_bucketing_cuts_padding_and_a_bigger_pool_cuts_more(report):
    figures = report["variants"]["measure_bucketing"]["metrics"]
    assert figures["padded_fraction_bucketed"] < figures["padded_fraction_plain"] / 2
    pools = [figures[f"padded_fraction_pool_{n}"] for n in (1, 2, 4, 8, 16, 32)]
    assert pools == sorted(pools, reverse=True) and pools[0] > 0.6  # a pool of one batch: no sorting
    # Medians of 5 epochs each, taken in turns within the run: the sampler costs little time.
    assert figures["samples_per_s_bucketed"] > 0.5 * figures["samples_per_s_plain"]


def test_batch_size_1_runs_but_takes_one_step_per_sample(report):
    run = report["variants"]["myth_batch_size_1"]
    out, figures = run["output_tail"], run["metrics"]
    assert "metric batches_trained=512" in out and "Traceback" not in out
    ratio = figures["samples_per_s_padded"] / figures["samples_per_s_batch_size_1"]
    assert ratio == pytest.approx(figures["batch_size_1_slowdown"], rel=0.05)


def test_oracle_fixed_loader_with_workers_yields_what_num_workers_0_yields():
    fixed = load_scenario_module(SCENARIO_DIR.name, "fixed")
    corpus = load_scenario_module(SCENARIO_DIR.name, "_token_corpus")
    dataset = fixed.TokenSequences(*corpus.make_corpus())
    runs = {}
    for workers in (0, 2):
        sampler = LengthBucketBatchSampler(dataset.lengths, batch_size=32, shuffle=True, seed=0)
        loader = DataLoader(dataset, batch_sampler=sampler, num_workers=workers, collate_fn=PadCollate(),
                            multiprocessing_context="fork" if workers else None)
        runs[workers] = list(loader)
    assert len(runs[0]) == len(runs[2]) == 16
    for ((t0, n0, m0), y0, i0), ((t2, n2, m2), y2, i2) in zip(runs[0], runs[2]):
        assert torch.equal(t0, t2) and torch.equal(n0, n2) and torch.equal(m0, m2)
        assert torch.equal(y0, y2) and torch.equal(i0, i2)
    # Every real token is where the dataset has it, in order; the mask is exactly the tokens.
    for (tokens, lengths, mask), _, indices in runs[2]:
        for row, n, index in zip(tokens, lengths.tolist(), indices.tolist()):
            assert torch.equal(row[:n], dataset[index][0]) and not row[n:].any()
        assert torch.equal(mask, tokens != 0)
