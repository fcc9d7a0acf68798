"""The training step scenario 28 feeds, sized at the start to the card, and the epoch timed
with CUDA events.  Imported by broken.py and fixed.py; not run on its own.

The bound is the step alone: the same step with its batch already on the GPU, which no loader
can beat.  The figures: ratio_to_bound (steps x the step alone / the epoch) and
gpu_busy_share (the time between each step's first and last kernel / the epoch), both over the
batches after WARMUP, so that the workers' start is not counted.
"""
import torch

from _photos import BATCH, OUT
from scenarios.instruments import CpuWait

WARMUP, STEP_MS, FED = 8, 6.0, 0.95  # FED: the share of the bound the fix must reach


def make_model(depth: int):
    layers = [torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.ReLU()]
    layers += [m for _ in range(depth) for m in (torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU())]
    model = torch.nn.Sequential(*layers, torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 10))
    return model.cuda(), torch.optim.SGD(model.parameters(), lr=0.01)


def train_step(model, optimizer, batch):
    optimizer.zero_grad(set_to_none=True)
    model(batch).logsumexp(1).mean().backward()
    optimizer.step()


def step_alone_ms(model, optimizer, batch) -> float:
    for _ in range(3):
        train_step(model, optimizer, batch)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(10):
        train_step(model, optimizer, batch)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 10


def sized_model():
    """The shallowest convolution stack whose step alone takes STEP_MS or more on this card."""
    batch = torch.randn(BATCH, 3, OUT, OUT, generator=torch.Generator().manual_seed(0)).cuda()
    for depth in (1, 2, 4, 8, 16, 32, 64):
        model, optimizer = make_model(depth)
        step_ms = step_alone_ms(model, optimizer, batch)
        if step_ms >= STEP_MS:
            break
    return model, optimizer, step_ms


def train_epoch(model, optimizer, batches) -> tuple[float, float, int, float]:
    """Train on every batch; the epoch's milliseconds after WARMUP, the GPU's busy ones, the
    steps timed, and the share of the time the processes waited for a CPU (workers included)."""
    waits, steps = CpuWait(), []
    epoch = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    for n, batch in enumerate(batches):
        if n == WARMUP:
            epoch[0].record()
            waits.start()
        timed = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        timed[0].record()
        train_step(model, optimizer, batch)
        timed[1].record()
        steps += [timed] if n >= WARMUP else []
    epoch[1].record()
    torch.cuda.synchronize()
    return epoch[0].elapsed_time(epoch[1]), sum(s.elapsed_time(e) for s, e in steps), len(steps), waits.share()


def report(plan, epoch_ms: float, busy_ms: float, steps: int, cpu_wait: float) -> None:
    """The figures the runner reads, and the verdict: fed at FED of the bound or more."""
    ratio = plan.step_ms * steps / epoch_ms
    print(plan.said())
    for name, value in (("cpu_wait_share", cpu_wait), ("step_alone_ms", plan.step_ms), ("batch_ms", plan.batch_ms),
                        ("photo_side", plan.side), ("workers_needed", plan.workers),
                        ("gpu_busy_share", busy_ms / epoch_ms), ("ratio_to_bound", ratio)):
        print(f"metric {name}={value:.3f}")
    said = (f"{steps} steps in {epoch_ms:.0f} ms on {torch.cuda.get_device_name()}: the GPU was busy "
            f"{busy_ms / epoch_ms:.0%} of the epoch, {ratio:.0%} of the bound ({plan.step_ms:.1f} ms a step alone)")
    if ratio < FED:
        raise SystemExit(f"the GPU waited for data: {said}")
    print(f"the GPU was fed: {said}")
