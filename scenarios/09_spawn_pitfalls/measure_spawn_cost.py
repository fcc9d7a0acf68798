"""Scenario 09, measurement: what spawn costs per epoch, with and without persistent_workers.

    python scenarios/09_spawn_pitfalls/measure_spawn_cost.py

Runs the fixed loader with one worker for two epochs three ways and reports,
per way, the seconds per epoch and how many worker processes were started (each
batch carries the pid of the worker that made it).  One worker is enough to
show the price, which is paid per worker.  Without persistent_workers
every epoch starts new workers; under spawn each one is a fresh interpreter
that imports torch and this script again before its first batch.
"""
import os
import time

from torch.utils.data import DataLoader

from fixed import SAMPLES, SensorReadings

EPOCHS, WORKERS = 2, 1
WAYS = {  # name: (start method, persistent_workers)
    "fork": ("fork", False),
    "spawn": ("spawn", False),
    "spawn_persistent": ("spawn", True),
}


class ReadingsWithPid(SensorReadings):
    def __getitem__(self, index):
        return super().__getitem__(index), os.getpid()


def measure(start_method, persistent):
    loader = DataLoader(ReadingsWithPid(SAMPLES), batch_size=64, num_workers=WORKERS,
                        persistent_workers=persistent, multiprocessing_context=start_method)
    epoch_s, pids = [], set()
    for _ in range(EPOCHS):
        started = time.perf_counter()
        for rows, worker_pids in loader:
            pids.update(worker_pids.tolist())
        epoch_s.append(time.perf_counter() - started)
    del loader  # ends persistent workers now, not at exit
    return epoch_s, len(pids)


def main():
    for name, (start_method, persistent) in WAYS.items():
        epoch_s, workers = measure(start_method, persistent)
        later = sum(epoch_s[1:]) / (EPOCHS - 1)  # workers already started, if persistent
        print(f"{name:>16}: epochs {', '.join(f'{s:.2f}' for s in epoch_s)} s; "
              f"{workers} worker process{'es' if workers > 1 else ''} started")
        print(f"metric {name}_first_epoch_s={epoch_s[0]:.3f}")
        print(f"metric {name}_later_epoch_s={later:.3f}")
        print(f"metric {name}_workers_started={workers}")


if __name__ == "__main__":
    main()
