"""A job whose worker a SIGKILL ends (the test sends it), and whose loop catches the error torch
raises and goes on holding its iterator: the dead worker stays a zombie nobody reaps, the case
`doctor --pid` must still name (scenario 06)."""
import time

import torch
from torch.utils.data import DataLoader

if __name__ == "__main__":
    batches = iter(DataLoader(torch.arange(10_000), batch_size=4, num_workers=2, multiprocessing_context="fork"))
    next(batches)
    print("started", flush=True)
    try:  # the model's step, long: torch's SIGCHLD handler raises here, and reaps nothing
        time.sleep(600)
    except RuntimeError as err:  # "DataLoader worker (pid N) is killed by signal: Killed."
        print(f"caught: {err}", flush=True)
    time.sleep(600)
