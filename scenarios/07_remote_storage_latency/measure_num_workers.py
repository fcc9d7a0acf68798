"""Scenario 07, measurement: throughput against its bound as workers are added.

    python scenarios/07_remote_storage_latency/measure_num_workers.py

broken.py's dataset (a batch's 4 requests one after another, 80 ms a batch) with
0 to 4 workers and the DataLoader's default prefetch.  Each worker delivers at
most one batch per 80 ms, and the model takes no more than one per step's
compute time, so throughput climbs with the workers until it meets the model's
own rate; past that point more workers add nothing but memory.  Expect 4
workers to run about three times as fast as none on a quiet machine, less where
a loaded CPU stretches the compute.
"""
from torch.utils.data import DataLoader

from scenarios.remote_training import BATCH, remote_store, train
from broken import RemoteImages


def main():
    throughput = {}
    with remote_store() as url:
        for workers in (0, 1, 2, 3, 4):
            run = train(DataLoader(RemoteImages(url), batch_size=BATCH, num_workers=workers))
            throughput[workers] = run["throughput_per_s"]
            print(f"{workers} workers: {run['throughput_per_s']:5.1f} steps/s, "
                  f"bound {run['bound_per_s']:5.1f}/s ({run['ratio_to_bound']:.0%})")
            print(f"metric throughput_w{workers}={run['throughput_per_s']:.2f}")
            print(f"metric bound_w{workers}={run['bound_per_s']:.2f}")
            print(f"metric utilisation_w{workers}={run['utilisation']:.3f}")
    print(f"metric speedup_w4_over_w0={throughput[4] / throughput[0]:.2f}")


if __name__ == "__main__":
    main()
