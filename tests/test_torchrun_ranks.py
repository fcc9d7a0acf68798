"""scenarios/torchrun_ranks.py, which 30 and 31 run their ranks with: a rank that trained with
DistributedDataParallel and destroyed its process group holds no gloo thread when it exits."""
import os
import socket
import subprocess
import sys

from conftest import REPO_ROOT

# What scenario 30's fixed.py does with its group, in a job of one rank, and the threads left after.
DDP_RANK = """
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from scenarios.torchrun_ranks import as_torchrun_job

as_torchrun_job(nproc=1, timeout_s=30)
model = DistributedDataParallel(torch.nn.Linear(4, 1))
model(torch.ones(2, 4)).sum().backward()
del model
dist.destroy_process_group()
print(sorted(open(f"/proc/self/task/{task}/comm").read().strip() for task in os.listdir("/proc/self/task")))
"""


def test_a_rank_that_destroyed_its_group_holds_no_gloo_thread():
    # DistributedDataParallel imports torch.distributed.nn, whose defaults took the group when imported
    # after init_process_group: the group outlived destroy_process_group, and its gloo threads were torn
    # down with the interpreter, where scenario 30's finished rank aborted about once in 40 runs.
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    rank = dict(os.environ, RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                MASTER_PORT=str(port), PYTHONPATH=str(REPO_ROOT))
    done = subprocess.run([sys.executable, "-c", DDP_RANK], env=rank, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-3000:]
    threads = done.stdout.strip().splitlines()[-1]
    assert "python" in threads and "gloo" not in threads, threads
