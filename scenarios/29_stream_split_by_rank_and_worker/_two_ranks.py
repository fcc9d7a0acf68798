"""Two ranks launched as torchrun launches them, the shards they stream, and what each rank trained on.

run_two_ranks(train) gives each of 2 rank processes the environment torchrun gives its ranks
(RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), joins them in a gloo process group on
127.0.0.1 (init_method env://, as under torchrun) and runs train(urls) in each over the tar shards
this process wrote; rank 0 gathers what both trained on (gather_object) and hands it to this
process.  Started by `torchrun --nproc-per-node 2 script.py` instead, the script's own process is
one rank (it writes its own copy of the shards) and rank 0 prints the report.  Every wait is
bounded (the gloo timeout, a deadline for the job); a failing rank takes the other down
(ProcessContext.join); where gloo cannot start the script exits 3.

write_shards(root) writes SHARDS webdataset tar files of PER_SHARD samples each; sample i holds
its index in `idx.txt`, so a list of indices is a list of samples.  report(seen) prints one line per
rank and returns the figures the scripts print as `metric` lines.
"""
import contextlib
import datetime
import os
import socket
import sys
import tempfile
import time

import torch.distributed as dist
import torch.multiprocessing as mp

from scenarios.host import cannot_run

WORLD_SIZE = 2
SHARDS, PER_SHARD = 8, 12  # 8 shards: 2 ranks x 2 workers read 2 each once the stream is split
SAMPLES = SHARDS * PER_SHARD
GLOO_TIMEOUT = datetime.timedelta(seconds=15)
JOB_DEADLINE_S = 80  # under the runner's limit, so that this message comes first
# Ranks are forked from this process, which has imported torch already (torchrun starts a fresh
# interpreter per rank, seconds each on a busy machine); what a rank sees is the same.
RANK_START_METHOD = "fork"


def write_shards(root):
    """SHARDS tar files under root, as webdataset's TarWriter writes them; returns their paths."""
    import webdataset as wds

    paths = []
    for shard in range(SHARDS):
        path = os.path.join(root, f"train-{shard:05d}.tar")
        with wds.TarWriter(path) as sink:
            for i in range(shard * PER_SHARD, (shard + 1) * PER_SHARD):
                sink.write({"__key__": f"sample{i:05d}", "idx.txt": str(i)})
        paths.append(path)
    return paths


def _train_on_shards(train):
    with tempfile.TemporaryDirectory(prefix="clinic-29-shards-") as root:
        return train(write_shards(root))


def _rank(rank, train, port, results, urls):
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(WORLD_SIZE),
                      LOCAL_WORLD_SIZE=str(WORLD_SIZE), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    try:
        dist.init_process_group("gloo", timeout=GLOO_TIMEOUT)
    except Exception as err:  # the environment, not the scenario: say so and stop
        results.put(("cannot", f"rank {rank}: {type(err).__name__}: {err}"))
        return
    try:
        mine = train(urls)
        gathered = [None] * WORLD_SIZE if rank == 0 else None
        dist.gather_object(mine, gathered, dst=0)
        if rank == 0:
            results.put(("seen", gathered))
    finally:
        dist.destroy_process_group()


def _under_torchrun(train):
    """This process is one rank of a torchrun job: rank 0 returns the gathered results, others exit."""
    dist.init_process_group("gloo", timeout=GLOO_TIMEOUT)
    try:
        mine = _train_on_shards(train)
        gathered = [None] * dist.get_world_size() if dist.get_rank() == 0 else None
        dist.gather_object(mine, gathered, dst=0)
        rank = dist.get_rank()
    finally:
        dist.destroy_process_group()
    if rank != 0:
        sys.exit(0)
    return gathered


def _check_gloo():
    if not (dist.is_available() and dist.is_gloo_available()):
        cannot_run("this torch build has no gloo backend (torch.distributed.is_gloo_available() "
                   "is False): install the standard CPU wheel of torch")
    names = [name for _, name in socket.if_nameindex() if name.startswith("lo")]
    if names:  # gloo's pairs on loopback too, whatever the host name resolves to
        os.environ.setdefault("GLOO_SOCKET_IFNAME", names[0])
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("127.0.0.1", 0))
            return probe.getsockname()[1]
    except OSError as err:
        cannot_run(f"cannot bind a TCP port on 127.0.0.1 ({err}): gloo needs a loopback interface")


def _reap(ranks):
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


def run_two_ranks(train):
    """Run train(shard_urls) on 2 gloo ranks; return [what rank 0 trained on, what rank 1 did]."""
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        return _under_torchrun(train)
    port = _check_gloo()
    with tempfile.TemporaryDirectory(prefix="clinic-29-shards-") as root:  # here: a killed rank leaves none
        return _launch(train, port, write_shards(root))


def _launch(train, port, urls):
    results = mp.get_context(RANK_START_METHOD).SimpleQueue()
    ranks = mp.start_processes(_rank, args=(train, port, results, urls), nprocs=WORLD_SIZE,
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
        _reap(ranks)
    if found is None and not results.empty():
        found = results.get()
    if found is None:
        raise RuntimeError("the ranks ended without rank 0 handing back what they trained on")
    if found[0] == "cannot":
        cannot_run(f"gloo could not start on 127.0.0.1 ({found[1]}); check that the loopback "
                   "interface is up and that local TCP ports are allowed (GLOO_SOCKET_IFNAME=lo)")
    return found[1]


def report(seen):
    """Print what each rank trained on and return the figures: seen[rank] -> sample indices."""
    sets = [set(indices) for indices in seen]
    for rank, indices in enumerate(seen):
        shards = sorted({i // PER_SHARD for i in indices})
        print(f"rank {rank} trained on {len(indices)} samples ({len(sets[rank])} distinct) "
              f"from shards {shards}")
    covered = set().union(*sets)
    return {
        "samples_per_rank": max(map(len, seen)),
        "distinct_per_rank": min(map(len, sets)),
        # the fault: a sample that more than one rank trained on in the same epoch
        "on_both_ranks": len(set.intersection(*sets)),
        # the other half of it: a rank's workers each reading the same shards
        "repeated_within_a_rank": max(len(i) - len(s) for i, s in zip(seen, sets)),
        "covered": len(covered),
        "unseen": SAMPLES - len(covered),
        # how many times the epoch went through the data, counted over every rank's batches
        "passes_over_the_data": round(sum(map(len, seen)) / SAMPLES, 2),
    }
