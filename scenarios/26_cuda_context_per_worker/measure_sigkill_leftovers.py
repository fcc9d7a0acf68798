"""Scenario 26, measurement: what a SIGKILLed trainer leaves on the GPU while its CUDA workers live.

    python -m scenarios run 26 --variant measure_sigkill_leftovers     # needs a CUDA GPU

A trainer with 2 spawn workers that hold a CUDA context is killed with SIGKILL after its first
batch (as the OOM killer or a scheduler does); 10 s later: which of its workers still live, and
the GPU memory they hold.  Once as broken.py's workers are, once with scenario 20's fix
(fixes/worker_lifetime.py's DieWithTrainer).  The leftovers are killed at the end.
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


def one_run(with_fix: bool, folder: str) -> tuple[int, int, int, float]:
    ready = os.path.join(folder, f"ready-{with_fix}")
    # Output to a file, not a pipe: the workers would hold a pipe open after the trainer's death.
    with open(os.path.join(folder, f"trainer-{with_fix}.log"), "w") as log:
        job = subprocess.Popen([sys.executable, __file__, "trainer", ready, str(with_fix)], stdout=log, stderr=log)
    deadline = time.monotonic() + 60
    while not os.path.exists(ready) and job.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(0.5)
    workers = [int(p) for p in Path(ready).read_text().split()] if os.path.exists(ready) else []
    job.send_signal(signal.SIGKILL)
    job.wait()
    time.sleep(WAIT_S)
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
    with tempfile.TemporaryDirectory() as folder:
        for with_fix, name in ((False, "without_fix"), (True, "with_fix")):
            started, left, holding, memory = one_run(with_fix, folder)
            print(f"metric {name}_workers_left={left}")
            print(f"metric {name}_left_holding_cuda={holding}")
            print(f"metric {name}_left_gpu_mib={memory:.0f}")
            print(f"{name.replace('_', ' ')}: {left} of {started} workers alive {WAIT_S} s after the trainer's "
                  f"SIGKILL, {holding} holding a CUDA context, {memory:.0f} MiB in nvidia-smi")


if __name__ == "__main__":
    if sys.argv[1:2] == ["trainer"]:
        trainer(sys.argv[2], sys.argv[3] == "True")
    else:
        main()
