"""Scenario 34: what the runs show beyond their declarations (tests/test_scenarios.py checks those):
dynamo's own log of each recompilation agrees with its counters, the ragged last batch and the
per-batch lengths are the reasons it gives, the limit is hit in broken.py and not in fixed.py; the
fixed collate's shapes, checked in this process; and `explain` names 34 on dynamo's texts."""
import re

import pytest
import torch

from conftest import load_scenario_module, scenario_report
from scenarios.clinic.doctor.explain import explain_text

FOLDER = "34_compile_recompiles_on_batch_shapes"
RECOMPILING = re.compile(r"\[__recompiles\] Recompiling function forward in ")
RAGGED = "tensor 'tokens' size mismatch at index 0. expected 4, actual 2"
LENGTH = re.compile(r"tensor 'tokens' size mismatch at index 1\. expected (\d+), actual (\d+)")
LIMIT = "torch._dynamo hit config.recompile_limit (8)"


@pytest.fixture(scope="module")
def report():
    return scenario_report("34")


def test_broken_recompiles_for_the_ragged_batch_and_each_length_then_hits_the_limit(report):
    run = report["variants"]["broken"]
    out, figures = run["output"], run["metrics"]
    # dynamo's log and its counters tell the same story: one log entry per recompilation it tried
    assert len(RECOMPILING.findall(out)) == figures["recompiles"] == 8
    assert RAGGED in out
    assert any(expected != actual for expected, actual in LENGTH.findall(out))
    assert out.count(LIMIT) == 1  # said once; the later new shapes run eagerly without a word
    assert figures["eager_steps"] == figures["batch_shapes"] - figures["graphs"]


def test_fixed_compiles_each_of_its_few_shapes_once_and_never_the_ragged_batch(report):
    run = report["variants"]["fixed"]
    out, figures = run["output"], run["metrics"]
    assert LIMIT not in out and RAGGED not in out
    assert figures["graphs"] == figures["batch_shapes"] == len(RECOMPILING.findall(out)) + 1


def test_the_fixed_collate_pads_to_a_multiple_of_16_and_drops_the_ragged_batch():
    fixed = load_scenario_module(FOLDER, "fixed")
    data = fixed.Sequences()
    loader = torch.utils.data.DataLoader(data, fixed.BATCH, shuffle=True, collate_fn=fixed.pad, drop_last=True,
                                         generator=torch.Generator().manual_seed(1))
    shapes = {tuple(batch.shape) for _ in range(20) for batch in loader}
    assert {rows for rows, _ in shapes} == {fixed.BATCH}
    assert {length % 16 for _, length in shapes} == {0} and len(shapes) <= 4
    broken = load_scenario_module(FOLDER, "broken")
    assert len({len(broken.pad([data[i] for i in range(start, start + 4)])[0]) for start in range(0, 28, 4)}) > 4


def _named(text: str) -> list[str]:
    return [f.scenario for f in explain_text(text)]


def test_explain_names_34_on_dynamos_texts(report):
    assert "34" in _named(report["variants"]["broken"]["output"])
    ragged = ("V1127 13:19:52.036000 32503 torch/_dynamo/guards.py:5396] [0/5] [__recompiles]     - 0/1: "
              + RAGGED)
    assert _named(ragged) == ["34"]
    # the limit warning as torch before 2.6 printed it (cache_size_limit), from HomebrewML/HeavyBall#16: 34 where
    # the log shows a batch's size changing (issue 47: alone, any compiled function, an optimizer's, hits it)
    old = ("W1126 16:03:16.529497 1228885 torch/_dynamo/convert_frame.py:844] [1/8] torch._dynamo hit "
           "config.cache_size_limit (8)")
    assert _named(old) == []
    assert _named(old + "\n" + old[:60] + "    last reason: 1/7: " + RAGGED) == ["34"]
    assert _named("RuntimeError: size mismatch for fc.weight: copying a param with shape torch.Size([4]) "
                  "from checkpoint, the shape in current model is torch.Size([2]).") == []


def test_a_new_shape_costs_more_to_compile_with_inductor_than_with_aot_eager(report):
    figures = report["variants"]["measure_recompile_cost"]["metrics"]
    assert figures["inductor_compile_s_per_shape"] > figures["aot_eager_compile_s_per_shape"]
    assert figures["mark_dynamic_graphs"] == 1 < figures["dynamic_none_graphs"]
