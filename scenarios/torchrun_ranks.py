"""A script that runs as a distributed job the way users launch one: `torchrun --nproc-per-node N script.py`.

    rank, world = as_torchrun_job(nproc=2, timeout_s=8)   # first thing in main()

Started by a person (`python script.py`), the script becomes torchrun's agent: this process runs
torch.distributed.run's own main() with `--standalone --nproc-per-node N` and the script, so its
PID is the launcher's, its children are the ranks (fresh interpreters, as torchrun starts them),
and its output and exit status are torchrun's (a failed rank: ChildFailedError, exit status 1).
Started by torchrun (or by the agent above), it joins the gloo process group with `timeout_s`,
the longest any collective waits for a peer (PyTorch's default is 30 minutes), and returns
(rank, world size).  Where gloo cannot start here, exit status 3 with the reason.

rank_of(pid) reads which rank a running process is, for the doctor.
"""
import datetime
import os
import socket
import sys

from scenarios.host import cannot_run

# Set by torchrun in every rank it starts (torch/distributed/elastic/agent/server/api.py).
RANK_VARIABLES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def rank_of(pid: int) -> tuple[int, int] | None:
    """(rank, world size) of a running process that a launcher started as one rank of several, read
    from its environment (/proc/PID/environ: the same user, Linux); None for any other process."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            names = dict(item.split(b"=", 1) for item in environ.read().split(b"\0") if b"=" in item)
        rank, world = int(names[b"RANK"]), int(names[b"WORLD_SIZE"])
    except (OSError, KeyError, ValueError):
        return None
    return (rank, world) if world > 1 else None


def _gloo_problem() -> str | None:
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_gloo_available()):
        return ("this torch build has no gloo backend (torch.distributed.is_gloo_available() is False): "
                "install the standard CPU wheel of torch")
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("127.0.0.1", 0))
    except OSError as err:
        return f"cannot bind a TCP port on 127.0.0.1 ({err}): gloo and torchrun's store need a loopback interface"
    return None


def _launch(nproc: int) -> None:
    """Become `torchrun --standalone --nproc-per-node N <this script>` and exit with its status."""
    from torch.distributed.run import main as torchrun

    problem = _gloo_problem()
    if problem:
        cannot_run(problem)
    loopback = [name for _, name in socket.if_nameindex() if name.startswith("lo")]
    if loopback:  # gloo's pairs on loopback, whatever the host name resolves to
        os.environ.setdefault("GLOO_SOCKET_IFNAME", loopback[0])
    torchrun(["--standalone", f"--nproc-per-node={nproc}", sys.argv[0], *sys.argv[1:]])
    sys.exit(0)


def as_torchrun_job(nproc: int = 2, timeout_s: float = 8.0) -> tuple[int, int]:
    """In the process a person started: run this script as an N-rank torchrun job and exit.
    In a rank: join the gloo process group and return (rank, world size)."""
    import torch.distributed as dist

    if not all(name in os.environ for name in RANK_VARIABLES):
        _launch(nproc)
    # torch.distributed.nn's functions take `group=group.WORLD` as a default, evaluated when it is first
    # imported (DistributedDataParallel imports it through torch._dynamo): imported after this call, they
    # hold the group past destroy_process_group, and its gloo threads die with the interpreter, which
    # aborted a finished rank ("terminate called without an active exception") about once in 40 runs.
    import torch.distributed.nn  # noqa: F401  (imported first, the defaults are None: no group is held)

    # The ranks share one output pipe, and an unbuffered print writes its text and its newline apart: another
    # rank's line once landed between them, gluing a `metric` line to the end of this rank's (30's fixed run,
    # 1 in about 40).  Buffered to each line's end, a line is one write, whole in the pipe.
    sys.stdout.reconfigure(line_buffering=True, write_through=False)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=timeout_s))
    return dist.get_rank(), dist.get_world_size()
