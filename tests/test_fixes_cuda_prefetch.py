"""Unit tests for fixes/cuda_prefetch.py (scenario 28: the GPU waits for data).  The copies
themselves need a GPU (28's fixed.py runs them there); here, on the CPU: batches of every shape
come out whole and in order, and on a stand-in of torch.cuda the loop's stream waits for each
batch's copy before it gets the batch, and before the next copy starts."""
import collections

import pytest
import torch

from fixes import cuda_prefetch
from fixes.cuda_prefetch import on_device

Pair = collections.namedtuple("Pair", "image label")


def test_batches_of_every_shape_come_out_whole_and_in_order_on_the_cpu():
    batches = [torch.arange(3), (torch.zeros(2), "caption"), {"x": [torch.ones(1)], "n": 4}, Pair(torch.ones(2), 7)]
    out = list(on_device(iter(batches), "cpu"))
    assert len(out) == 4 and torch.equal(out[0], batches[0]) and out[1][1] == "caption"
    assert out[2]["n"] == 4 and torch.equal(out[2]["x"][0], torch.ones(1))
    assert isinstance(out[3], Pair) and out[3].label == 7
    grouped = next(on_device([collections.defaultdict(list, x=torch.ones(1))], "cpu"))
    assert torch.equal(grouped["x"], torch.ones(1))   # a mapping its type cannot rebuild: a plain dict


def test_without_cuda_it_says_so_rather_than_failing_inside_torch(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="no usable CUDA device for cuda; pass device='cpu'"):
        next(on_device([torch.ones(1)]))


class _Streams:
    """torch.cuda's streams, recording what the fix asks of them."""

    def __init__(self, log):
        self.log, self.copying = log, False

    def Stream(self, device):   # torch.cuda's own name
        return "side"

    def current_stream(self, device):
        return self

    def wait_stream(self, stream):
        self.log.append("wait")

    def stream(self, stream):
        streams = self

        class Within:
            def __enter__(self):
                streams.copying = True

            def __exit__(self, *exc):
                streams.copying = False
        return Within()


def test_the_loop_waits_for_each_copy_and_the_next_copy_starts_after_that_wait(monkeypatch):
    log = []
    streams = _Streams(log)
    for name in ("Stream", "current_stream", "stream"):
        monkeypatch.setattr(torch.cuda, name, getattr(streams, name))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)

    def copy(batch, device, tensors):
        assert streams.copying, "a copy outside the side stream would wait for the step"
        log.append(f"copy {batch}")
        return batch
    monkeypatch.setattr(cuda_prefetch, "_move", copy)
    for batch in on_device(range(3)):
        log.append(f"step {batch}")
    assert log == ["copy 0", "wait", "copy 1", "step 0", "wait", "copy 2", "step 1", "wait", "step 2"]
