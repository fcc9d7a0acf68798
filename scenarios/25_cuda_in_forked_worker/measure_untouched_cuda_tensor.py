"""Scenario 25, measurement: a CUDA tensor the dataset holds but never touches, under fork.

    python -m scenarios run 25 --variant measure_untouched_cuda_tensor     # needs a CUDA GPU

Does a forked worker end cleanly when its copy of the dataset holds a CUDA tensor it never
read?  From torch 2.14 a worker frees its dataset itself when it shuts down; freeing a CUDA
tensor in a child of a CUDA process could abort there.  The loader runs in a child process of
its own (bounded); printed: its exit status and its last line of error output.
"""
import subprocess
import sys

import torch
from torch.utils.data import DataLoader, Dataset

from scenarios.host import cannot_run, cuda_problem_here

SAMPLES, FEATURES = 512, 256


class Features(Dataset):
    def __init__(self):
        self.rows = torch.randn(SAMPLES, FEATURES)
        self.mean = self.rows.mean(0).cuda()  # held, never read by a worker

    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        return self.rows[index]


def child():
    loader = DataLoader(Features(), batch_size=64, num_workers=2, multiprocessing_context="fork")
    print(f"read {sum(len(batch) for batch in loader)} samples", flush=True)


def main():
    if problem := cuda_problem_here():
        cannot_run(problem)
    done = subprocess.run([sys.executable, __file__, "child"], capture_output=True, text=True, timeout=60)
    said = (done.stderr.strip().splitlines() or ["(nothing on stderr)"])[-1][:200]
    print(f"metric untouched_cuda_exit_status={done.returncode}")
    print(f"an untouched CUDA tensor in a forked worker's dataset, torch {torch.__version__}: the loader's "
          f"process exited {done.returncode}; {done.stdout.strip() or 'no output'}; stderr: {said}")


if __name__ == "__main__":
    child() if sys.argv[1:] == ["child"] else main()
