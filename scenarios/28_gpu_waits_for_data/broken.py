"""Scenario 28, broken: the GPU waits while the training process builds and copies each batch.

    make scenario-28        # needs a CUDA GPU; elsewhere it says so and exits 3

A training step of a few milliseconds on the GPU (a convolution stack, sized at the start to
take at least 6 ms here), fed by num_workers=0 with pageable, synchronous copies: loading and
training take turns, and the step time is their sum.  CUDA events measure the GPU's busy share
of the epoch and the bound: the same steps with the data already on the GPU.  fixed.py loads
in workers, pins, and moves the next batch on a side stream while the step runs: the step time
becomes the larger of the two, as "How to assign num_workers to PyTorch DataLoader" says.
"""
import torch
from torch.utils.data import DataLoader, Dataset

from scenarios.host import cannot_run, cuda_problem_here
from scenarios.instruments import CpuWait

BATCHES, WARMUP, BATCH, SIDE, STEP_MS = 160, 8, 64, 96, 6.0


class Images(Dataset):
    """Decoded uint8 images turned into normalised floats: a few ms of CPU per batch."""

    def __init__(self):
        self.pool = torch.randint(0, 256, (256, 3, SIDE, SIDE), dtype=torch.uint8,
                                  generator=torch.Generator().manual_seed(0))

    def __len__(self):
        return BATCHES * BATCH

    def __getitem__(self, index):
        image = self.pool[index % len(self.pool)].float().div(255)
        return ((image.flip(-1) if index % 2 else image) - 0.45) / 0.225


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
    """The step with its batch already on the GPU: the bound no loader can beat."""
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
    batch = torch.stack([Images()[i] for i in range(BATCH)]).cuda()
    for depth in (1, 2, 4, 8, 16, 32, 64):
        model, optimizer = make_model(depth)
        step_ms = step_alone_ms(model, optimizer, batch)
        if step_ms >= STEP_MS:
            break
    return model, optimizer, step_ms


def main():
    if problem := cuda_problem_here():
        cannot_run(problem)
    model, optimizer, step_ms = sized_model()
    loader = DataLoader(Images(), batch_size=BATCH, num_workers=0)  # BUG: loading and copying while the GPU waits
    waits, steps = CpuWait(), []
    waits.start()
    epoch = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
    for n, batch in enumerate(loader):
        batch = batch.to("cuda")
        if n == WARMUP:
            epoch[0].record()
        timed = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        timed[0].record()
        train_step(model, optimizer, batch)
        timed[1].record()
        steps += [timed] if n >= WARMUP else []
    epoch[1].record()
    torch.cuda.synchronize()
    epoch_ms, busy_ms = epoch[0].elapsed_time(epoch[1]), sum(s.elapsed_time(e) for s, e in steps)
    ratio = step_ms * len(steps) / epoch_ms
    print(f"metric cpu_wait_share={waits.share():.3f}")
    print(f"metric step_alone_ms={step_ms:.2f}")
    print(f"metric gpu_busy_share={busy_ms / epoch_ms:.3f}")
    print(f"metric ratio_to_bound={ratio:.3f}")
    said = (f"{len(steps)} steps in {epoch_ms:.0f} ms on {torch.cuda.get_device_name()}: the GPU was busy "
            f"{busy_ms / epoch_ms:.0%} of the epoch, {ratio:.0%} of the bound ({step_ms:.1f} ms a step alone)")
    if ratio < 0.9:
        raise SystemExit(f"the GPU waited for data: {said}")
    print(f"the GPU was fed: {said}")


if __name__ == "__main__":
    main()
