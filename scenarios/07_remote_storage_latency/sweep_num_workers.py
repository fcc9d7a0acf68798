"""Scenario 07, sweep: throughput against the bound as workers are added.

    python scenarios/07_remote_storage_latency/sweep_num_workers.py

Past the point where fetching outruns the model, more workers add nothing.
"""
from fixed import PREFETCH_FACTOR, measure

for workers in (0, 1, 2, 3, 4):
    run = measure(workers, PREFETCH_FACTOR if workers else None)
    print(f"metric throughput_w{workers}={run['throughput_per_s']:.2f}")
    print(f"metric bound_w{workers}={run['bound_per_s']:.2f}")
