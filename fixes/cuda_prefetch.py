"""on_device(loader): each batch copied to the GPU on a side stream while the step before it runs.

Fixes scenario 28 (the GPU waits for data: busy a fraction of each epoch while the training
process builds and copies every batch itself).  Workers build the batches and `pin_memory=True`
puts them in page-locked memory; what is left is the copy itself.  `batch.to("cuda")` in the loop
copies from pageable memory and the step waits for it; `non_blocking=True` alone, on the default
stream, still runs the copy between two steps.  Copying the *next* batch on a stream of its own
overlaps it with the current step:

    from cuda_prefetch import on_device

    loader = DataLoader(dataset, batch_size=64, num_workers=8, pin_memory=True)
    for images, labels in on_device(loader):          # instead of `for batch in loader` + .to()
        loss = model(images).loss(labels) ...

- A batch may be a tensor or a tuple, list or dict of them (nested too); anything else in it
  (strings, numbers) passes through as it is.
- Before a batch is handed to the loop, the loop's stream waits for its copy
  (`wait_stream`), so the step never reads a half-copied batch.  Each copied tensor is then
  marked as used by the loop's stream (`record_stream`): PyTorch's caching allocator would
  otherwise reuse its memory as soon as the side stream is done with it
  (https://pytorch.org/docs/stable/generated/torch.Tensor.record_stream.html).
- Without pinned memory the copy cannot overlap (a pageable copy is synchronous for the host;
  https://pytorch.org/docs/stable/notes/cuda.html#use-pinned-memory-buffers), so keep
  `pin_memory=True` on the loader.
- One batch is on the GPU ahead of the loop: the memory of one batch more.
- `device="cpu"`: the batches are moved plainly, in the same order, so the same loop runs on a
  machine without a GPU.

One file, no project imports: copy it into your code base.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import torch


def _move(batch: Any, device: torch.device, tensors: list) -> Any:
    """The batch with each tensor in it copied to `device` (asynchronously from pinned memory)."""
    if isinstance(batch, torch.Tensor):
        moved = batch.to(device, non_blocking=True)
        tensors.append(moved)
        return moved
    if isinstance(batch, dict):
        moved = {key: _move(value, device, tensors) for key, value in batch.items()}
        try:
            return type(batch)(moved)
        except TypeError:   # a mapping type built otherwise (a defaultdict): a plain dict, as default_collate does
            return moved
    if isinstance(batch, (list, tuple)):
        items = [_move(item, device, tensors) for item in batch]
        return type(batch)(*items) if hasattr(batch, "_fields") else type(batch)(items)   # a namedtuple too
    return batch


def on_device(batches: Iterable, device: str | torch.device = "cuda") -> Iterator:
    """Yield each batch of `batches` (a DataLoader, or any iterable of batches) on `device`, the next
    one already being copied while the loop works on this one."""
    device = torch.device(device)
    if device.type != "cuda":
        for batch in batches:
            yield _move(batch, device, [])
        return
    if not torch.cuda.is_available():
        raise RuntimeError(f"on_device: no usable CUDA device for {device}; pass device='cpu' to run without one")
    side, loop_stream = torch.cuda.Stream(device), torch.cuda.current_stream(device)

    def copied(batch):
        tensors: list = []
        with torch.cuda.stream(side):
            return _move(batch, device, tensors), tensors

    ahead = None
    for batch in batches:
        if ahead is None:
            ahead = copied(batch)
            continue
        loop_stream.wait_stream(side)         # for the copy of `ahead`: the next one is launched after
        ready, ahead = ahead, copied(batch)   # the next copy runs while the loop's step uses `ready`
        yield _kept(ready, loop_stream)
    if ahead is not None:
        loop_stream.wait_stream(side)
        yield _kept(ahead, loop_stream)


def _kept(copy: tuple, loop_stream):
    """The copied batch, its memory marked as in use by the loop's stream until the step is done."""
    batch, tensors = copy
    for tensor in tensors:
        tensor.record_stream(loop_stream)
    return batch
