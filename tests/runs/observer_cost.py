"""What the observer of `doctor -- COMMAND` costs a training loop: the same loop timed by itself, run
plainly and under the doctor, in turn, the fastest of N runs each.

    python tests/runs/observer_cost.py [--runs 3]      # prints both, and the cost as a share of a step

The loop: 96x96 RGB images made in 2 forked workers, batches of 32, a small CNN's forward and backward
on the CPU, 40 steps after 5 of warm-up; it prints its own milliseconds per step.  The observer works
per batch (each sample's fingerprint, the tallies it writes) and per worker (its records), so its cost
is a share of the step that shrinks as the step grows; this loop's step is a short one (tens of ms).
A measurement, not a check: exit status 0.
"""
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WARM, STEPS = 5, 40


def train() -> None:
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, Dataset

    class Images(Dataset):
        def __len__(self):
            return 32 * (WARM + STEPS)

        def __getitem__(self, index):
            g = torch.Generator().manual_seed(index)
            return torch.rand(3, 96, 96, generator=g), index % 10

    torch.set_num_threads(1)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2), nn.ReLU(), nn.Conv2d(16, 32, 3, stride=2), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Images(), batch_size=32, num_workers=2, multiprocessing_context="fork")
    started = None
    for step, (x, y) in enumerate(loader):
        if step == WARM:
            started = time.perf_counter()
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"ms_per_step={(time.perf_counter() - started) * 1000 / STEPS:.2f}", flush=True)


def _timed(command: list[str]) -> float:
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    found = re.search(r"ms_per_step=([\d.]+)", done.stdout + done.stderr)
    if not found:
        sys.exit(f"no step time in the run's output:\n{(done.stdout + done.stderr)[-2000:]}")
    return float(found.group(1))


def main(runs: int) -> None:
    own = [sys.executable, str(Path(__file__).resolve()), "--train"]
    watched = [sys.executable, "-m", "scenarios", "doctor", "--json", "--seconds", "120", "--", *own]
    plain, observed = [], []
    for _ in range(runs):  # in turn, so that other work on the machine weighs on both alike
        plain.append(_timed(own))
        observed.append(_timed(watched))
    cost = min(observed) / min(plain) - 1
    print(f"plain: {min(plain):.1f} ms a step (runs {', '.join(f'{t:.1f}' for t in plain)})")
    print(f"under doctor --: {min(observed):.1f} ms a step (runs {', '.join(f'{t:.1f}' for t in observed)})")
    print(f"the observer's cost: {cost:+.1%} of a step")


if __name__ == "__main__":
    if "--train" in sys.argv:
        train()
    else:
        main(int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 3)
