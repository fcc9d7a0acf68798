"""Scenario 26, measurement: what a SIGKILLed trainer leaves on the GPU while its CUDA workers live.

    python -m scenarios run 26 --variant measure_sigkill_leftovers     # needs a CUDA GPU

A trainer with 2 spawn workers that hold a CUDA context is killed with SIGKILL after its first
batch (as the OOM killer or a scheduler does); 10 s later or more: which of its workers still live, and
the GPU memory they hold.  Two trainers side by side: one whose workers are broken.py's, one
with scenario 20's fix (fixes/worker_lifetime.py's DieWithTrainer).  The leftovers are killed
at the end.
"""
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset

from scenarios.gpu_instruments import context_census
from scenarios.host import cannot_run, cuda_problem_here

WAIT_S = 10


class Features(Dataset):
    def __len__(self):
        return 10_000

    def __getitem__(self, index):
        time.sleep(0.05)
        return torch.ones(64)


def pick_gpu(worker_id):
    torch.cuda.set_device(0)


def trainer(ready: str, with_fix: bool):
    from fixes.worker_lifetime import DieWithTrainer
    init = DieWithTrainer(then=pick_gpu) if with_fix else pick_gpu
    loader = DataLoader(Features(), batch_size=8, num_workers=2, multiprocessing_context="spawn", worker_init_fn=init)
    torch.cuda.init()
    batches = iter(loader)
    next(batches)
    Path(ready).write_text(" ".join(str(w.pid) for w in batches._workers))
    time.sleep(120)  # killed long before


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def start(with_fix: bool, folder: str) -> tuple[subprocess.Popen, str]:
    ready = os.path.join(folder, f"ready-{with_fix}")
    # Output to a file, not a pipe: the workers would hold a pipe open after the trainer's death.
    with open(os.path.join(folder, f"trainer-{with_fix}.log"), "w") as log:
        job = subprocess.Popen([sys.executable, __file__, "trainer", ready, str(with_fix)], stdout=log, stderr=log)
    return job, ready


def killed(job: subprocess.Popen, ready: str) -> list[int]:
    """SIGKILL the trainer once its workers delivered a batch; their PIDs."""
    deadline = time.monotonic() + 60
    while not os.path.exists(ready) and job.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(0.5)
    workers = [int(p) for p in Path(ready).read_text().split()] if os.path.exists(ready) else []
    job.send_signal(signal.SIGKILL)
    job.wait()
    return workers


def census(workers: list[int]) -> tuple[int, int, int, float]:
    """Of these workers: how many, how many live, how many hold a CUDA context, their MiB; the
    live ones are killed after."""
    left = [pid for pid in workers if _alive(pid)]
    holding, memory = context_census(left)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:  # gone meanwhile
            pass
    return len(workers), len(left), holding, sum(memory)


def main():
    if problem := cuda_problem_here():
        cannot_run(problem)
    runs = (False, "without_fix"), (True, "with_fix")
    with tempfile.TemporaryDirectory() as folder:
        # Both trainers at once: each census counts its own workers' PIDs, and one wait serves both.
        jobs = [start(with_fix, folder) for with_fix, _ in runs]
        workers = [killed(*job) for job in jobs]
        time.sleep(WAIT_S)
        for (_, name), pids in zip(runs, workers):
            started, left, holding, memory = census(pids)
            print(f"metric {name}_workers_left={left}")
            print(f"metric {name}_left_holding_cuda={holding}")
            print(f"metric {name}_left_gpu_mib={memory:.0f}")
            print(f"{name.replace('_', ' ')}: {left} of {started} workers alive {WAIT_S} s or more after the trainer's "
                  f"SIGKILL, {holding} holding a CUDA context, {memory:.0f} MiB in nvidia-smi")


if __name__ == "__main__":
    if sys.argv[1:2] == ["trainer"]:
        trainer(sys.argv[2], sys.argv[3] == "True")
    else:
        main()
