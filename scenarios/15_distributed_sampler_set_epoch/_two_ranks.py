"""Two ranks of a distributed job on this machine, and what their loops saw (imported by the scripts).

run_two_ranks(train) starts 2 rank processes (torch.multiprocessing.start_processes), each
joins a gloo process group on 127.0.0.1, runs train(rank) and returns what it gives; rank 0
gathers both ranks' results over gloo (gather_object) and hands them to this process.  A rank
that fails takes the other down with it (ProcessContext.join terminates the rest), and every
wait is bounded: the gloo timeout for rendezvous and collectives, a deadline for the whole job.
Where gloo cannot start (no distributed package, no loopback, a refused port) the script ends
with scenarios.host.cannot_run, exit status 3.

report(orders, samples) prints one line per epoch and returns the figures the scripts print
as `metric` lines; orders[rank][epoch] is the list of indices in the order that rank's loop
received them.
"""
import contextlib
import datetime
import os
import socket
import time

import torch.distributed as dist
import torch.multiprocessing as mp

from scenarios.host import cannot_run

WORLD_SIZE = 2
GLOO_TIMEOUT = datetime.timedelta(seconds=15)  # a rank whose peer is gone fails in seconds
JOB_DEADLINE_S = 25  # under the runner's limit, so that this message comes first
# Ranks are forked from this process, which has imported torch already: a start in
# milliseconds instead of an `import torch` per rank (mp.spawn and torchrun start fresh
# interpreters; the sampler behaves the same).  Each rank then forks its own DataLoader workers.
RANK_START_METHOD = "fork"


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _loopback_name():
    names = [name for _, name in socket.if_nameindex() if name.startswith("lo")]
    return names[0] if names else None


def _rank(rank, train, port, results):
    try:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=WORLD_SIZE, timeout=GLOO_TIMEOUT)
    except Exception as err:  # the environment, not the scenario: say so and stop
        results.put(("cannot", f"rank {rank}: {type(err).__name__}: {err}"))
        return
    try:
        mine = train(rank)
        gathered = [None] * WORLD_SIZE if rank == 0 else None
        dist.gather_object(mine, gathered, dst=0)
        if rank == 0:
            results.put(("orders", gathered))
    finally:
        dist.destroy_process_group()


def run_two_ranks(train):
    """Run train(rank) on 2 gloo ranks; return [rank 0's result, rank 1's result]."""
    if not (dist.is_available() and dist.is_gloo_available()):
        cannot_run("this torch build has no gloo backend (torch.distributed.is_gloo_available() "
                   "is False): install the standard CPU wheel of torch")
    try:
        port = _free_port()
    except OSError as err:
        cannot_run(f"cannot bind a TCP port on 127.0.0.1 ({err}): gloo needs a loopback interface")
    loopback = _loopback_name()
    if loopback:  # gloo's pairs on loopback too, whatever the host name resolves to
        os.environ.setdefault("GLOO_SOCKET_IFNAME", loopback)
    results = mp.get_context(RANK_START_METHOD).SimpleQueue()
    ranks = mp.start_processes(_rank, args=(train, port, results), nprocs=WORLD_SIZE,
                               join=False, start_method=RANK_START_METHOD)
    found, deadline = None, time.monotonic() + JOB_DEADLINE_S
    try:
        # join() raises as soon as one rank fails, after terminating the other one.
        while not ranks.join(timeout=0.2, grace_period=2):
            if found is None and not results.empty():
                found = results.get()
                if found[0] == "cannot":
                    break
            if time.monotonic() > deadline:
                raise TimeoutError(f"the 2 ranks did not finish in {JOB_DEADLINE_S} s")
    finally:
        for process in ranks.processes:  # reached with ranks alive only on a failure
            if process.is_alive():
                process.terminate()
            process.join(5)
            if process.is_alive():
                process.kill()
                process.join()
        for error_file in ranks.error_files:  # torch leaves a failed rank's traceback file behind
            with contextlib.suppress(FileNotFoundError):
                os.unlink(error_file)
    if found is None and not results.empty():
        found = results.get()
    if found is None:
        raise RuntimeError("the ranks ended without rank 0 handing back the gathered orders")
    if found[0] == "cannot":
        cannot_run(f"gloo could not start on 127.0.0.1 ({found[1]}); check that the loopback "
                   "interface is up and that local TCP ports are allowed (GLOO_SOCKET_IFNAME=lo)")
    return found[1]


def report(orders, samples):
    """Print each epoch's orders and return the figures: orders[rank][epoch] -> indices."""
    epochs = len(orders[0])
    for epoch in range(epochs):
        per_rank = [rank_orders[epoch] for rank_orders in orders]
        repeats = sum(rank_orders[epoch] == rank_orders[0] for rank_orders in orders)
        total, distinct = sum(map(len, per_rank)), len(set().union(*per_rank))
        shared = len(set(per_rank[0]) & set(per_rank[1]))
        print(f"epoch {epoch}: rank 0 got {per_rank[0][:6]}..., rank 1 got {per_rank[1][:6]}...; "
              f"order of epoch 0 on {repeats} of {len(orders)} ranks; {total} indices, "
              f"{distinct} distinct, {shared} on both ranks")
    by_epoch = [[rank_orders[e] for rank_orders in orders] for e in range(epochs)]
    duplicates = [sum(map(len, r)) - len(set().union(*r)) for r in by_epoch]
    shared = [len(set(r[0]) & set(r[1])) for r in by_epoch]
    return {
        "epochs": epochs,
        # later epochs in which every rank got exactly epoch 0's order
        "repeated_epochs": sum(all(o[e] == o[0] for o in orders) for e in range(1, epochs)),
        "distinct_orders_per_rank": min(len({tuple(e) for e in o}) for o in orders),
        "samples_per_rank": max(len(e) for o in orders for e in o),
        # the oracle: both ranks together cover the dataset every epoch
        "distinct_samples_per_epoch": min(len(set().union(*r)) for r in by_epoch),
        "unseen_per_epoch": max(samples - len(set().union(*r)) for r in by_epoch),
        "padding_duplicates_per_epoch": max(duplicates),
        "shared_beyond_padding": max(s - d for s, d in zip(shared, duplicates)),
        # how much of the dataset one rank trains on over the whole run
        "min_samples_seen_by_a_rank": min(len({i for e in o for i in e}) for o in orders),
        "unseen_in_run": samples - len({i for o in orders for e in o for i in e}),
    }
