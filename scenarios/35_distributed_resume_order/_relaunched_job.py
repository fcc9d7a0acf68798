"""A 2-process Accelerate job, launched twice: the second launch resumes it from a checkpoint (imported by scripts).

run_job(train) does what a person and a cluster do with a training script:

- in the process a person started (`python broken.py`): launch 1 is `accelerate launch --multi_gpu
  --num_processes 2 <the script>`, as users start a job: torchrun's agent and 2 fresh rank processes,
  gloo on 127.0.0.1.  Each rank runs train(job): the whole job, which writes a checkpoint
  (accelerator.save_state) at SAVE_AT_STEP, mid-epoch 1.  Launch 2 is the same command again, as a
  job restarted from that checkpoint is: 2 fresh processes, whose train(job) finds it and resumes.
- in a rank: train(job), then exit.

Launch 1 runs to the end, so it is also the uninterrupted run the resumed one is compared with,
sample by sample.  Each rank writes what it trained on, one line per step, into a log of its own;
run_job returns them: logs[launch][rank] = {step: [sample indices]}.  Every launch is bounded
(LAUNCH_LIMIT_S) and its process tree ended; the temporary folder is removed.

report(logs, samples, seed) prints, per rank, how the resumed epoch compares with the
uninterrupted one, and returns the figures the scripts print as `metric` lines.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections import Counter

import psutil
import torch

from scenarios.host import cannot_run

RANKS = 2
SAVE_AT_STEP = 9   # each rank's step: 6 steps an epoch, so epoch 1, 3 steps in
LAUNCH_LIMIT_S = 120  # a launch takes 10-20 s on 2 idle cores, 90 on a loaded machine; two stay under the limit
FOLDER, LAUNCH = "RESUME_ORDER_JOB_FOLDER", "RESUME_ORDER_JOB_LAUNCH"


class Job:
    """What train(job) gets in a rank: its checkpoint, its log of what it trained on."""

    def __init__(self):
        self.folder, self.rank = os.environ[FOLDER], int(os.environ["RANK"])
        self.log = os.path.join(self.folder, f"launch{os.environ[LAUNCH]}.rank{self.rank}.jsonl")

    def checkpoint(self, step):
        return os.path.join(self.folder, f"step_{step}")

    def last_checkpoint(self):
        """(folder, step) of the latest checkpoint, or None on a first start."""
        steps = [int(name[5:]) for name in os.listdir(self.folder) if name.startswith("step_")]
        return (self.checkpoint(max(steps)), max(steps)) if steps else None

    def trained(self, step, indices):
        with open(self.log, "a") as log:
            log.write(json.dumps([step, indices.tolist()]) + "\n")


def _launch(script, folder, launch):
    command = [sys.executable, "-m", "accelerate.commands.accelerate_cli", "launch", "--multi_gpu",
               f"--num_processes={RANKS}", "--num_machines=1", "--mixed_precision=no", "--dynamo_backend=no",
               f"--main_process_port={_free_port()}", script, *sys.argv[1:]]
    env = dict(os.environ, **{FOLDER: folder, LAUNCH: str(launch)})
    loopback = [name for _, name in socket.if_nameindex() if name.startswith("lo")]
    if loopback:  # gloo's pairs on loopback, whatever the host name resolves to
        env.setdefault("GLOO_SOCKET_IFNAME", loopback[0])
    launcher = subprocess.Popen(command, env=env)
    try:
        status = launcher.wait(LAUNCH_LIMIT_S)
    except subprocess.TimeoutExpired:
        _end_tree(launcher.pid)
        raise RuntimeError(f"launch {launch} did not finish in {LAUNCH_LIMIT_S} s") from None
    if status != 0:
        raise RuntimeError(f"launch {launch} (`accelerate launch`) failed with exit status {status}")


def _free_port():
    """A port nobody listens on: Accelerate's default, 29500, may be another job's on this machine."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _end_tree(pid):
    try:
        parent = psutil.Process(pid)
        tree = [*parent.children(recursive=True), parent]
    except psutil.Error:
        return
    for process in tree:
        try:
            process.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(tree, timeout=10)


def _read(folder, launch):
    logs = {}
    for rank in range(RANKS):
        with open(os.path.join(folder, f"launch{launch}.rank{rank}.jsonl")) as log:
            logs[rank] = dict(json.loads(line) for line in log)
    return logs


def run_job(train):
    """In a rank: train(Job()) and exit.  Started by a person: launch 1, then launch 2 resumed from
    launch 1's checkpoint; returns [launch 1's logs, launch 2's logs]."""
    if FOLDER in os.environ:
        train(Job())
        sys.exit(0)
    if not (torch.distributed.is_available() and torch.distributed.is_gloo_available()):
        cannot_run("this torch build has no gloo backend (torch.distributed.is_gloo_available() is False): "
                   "install the standard CPU wheel of torch")
    folder = tempfile.mkdtemp(prefix="checkpoints-")
    try:
        for launch in (1, 2):
            _launch(os.path.abspath(sys.argv[0]), folder, launch)
        return [_read(folder, 1), _read(folder, 2)]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def seedable_order(seed, epoch, samples, batch, rank):
    """Rank `rank`'s batches of an epoch as Accelerate's SeedableRandomSampler draws them (a generator
    seeded with seed + epoch, accelerate/data_loader.py) and BatchSamplerShard deals them (every
    RANKS-th batch of 8 to each rank, data_loader.py)."""
    order = torch.randperm(samples, generator=torch.Generator().manual_seed(seed + epoch)).tolist()
    batches = [order[i:i + batch] for i in range(0, samples, batch)]
    return batches[rank::RANKS]


def report(logs, samples, batch, seed):
    """Print, per rank, the resumed epoch against the uninterrupted one; return the figures."""
    uninterrupted, resumed = logs
    first = min(min(steps) for steps in resumed.values())
    per_epoch = samples // batch // RANKS
    epoch, into = divmod(first - 1, per_epoch)
    print(f"launch 1: {RANKS} processes trained steps 1-{max(uninterrupted[0])} uninterrupted, "
          f"with a checkpoint at step {first - 1} (epoch {epoch}, step {into} of {per_epoch})")
    print(f"launch 2: {RANKS} fresh processes resumed from that checkpoint and trained steps "
          f"{first}-{max(resumed[0])}")
    figures = {"resumed_at_step": first - 1, "resumed_in_epoch": epoch, "resumed_steps": 0,
               "resumed_steps_as_uninterrupted": 0, "resumed_steps_in_epoch_0_order": 0}
    span = range(epoch * per_epoch + 1, (epoch + 1) * per_epoch + 1)
    job = Counter()  # the whole job's epoch: both ranks' batches, as the model learned from them
    for rank in range(RANKS):
        expected = Counter(i for step in span for i in uninterrupted[rank][step])
        got = Counter(i for step in span for i in (resumed[rank] if step >= first else uninterrupted[rank])[step])
        job += got
        twice, never = sum(1 for n in got.values() if n > 1), len(set(expected) - set(got))
        replayed = seedable_order(seed, 0, samples, batch, rank)
        same = sum(resumed[rank][s] == uninterrupted[rank][s] for s in resumed[rank] if s in span)
        epoch_0 = sum(resumed[rank][s] == replayed[s - 1 - epoch * per_epoch] for s in resumed[rank] if s in span)
        print(f"rank {rank}: of its {len(expected)} samples of epoch {epoch} (uninterrupted), across the resume "
              f"{twice} trained twice, {never} never; {same} of its {len(resumed[rank])} resumed steps had the "
              f"uninterrupted batch, {epoch_0} the batch of epoch 0's order (seed {seed} + epoch 0)")
        print(f"rank {rank}: step {first}: uninterrupted {uninterrupted[rank][first]}, "
              f"resumed {resumed[rank][first]}")
        figures[f"rank{rank}_samples_seen_twice"], figures[f"rank{rank}_samples_never_seen"] = twice, never
        figures["resumed_steps_as_uninterrupted"] += same
        figures["resumed_steps_in_epoch_0_order"] += epoch_0
        figures["resumed_steps"] += len(resumed[rank])
    tally = Counter(job.get(i, 0) for i in range(samples))
    figures["samples_seen_twice"] = sum(n for count, n in tally.items() if count > 1)
    figures["samples_never_seen"] = tally[0]
    print(f"the job, both ranks: in epoch {epoch}, {tally[1]} of {samples} samples trained on once, "
          f"{figures['samples_seen_twice']} twice or more, {tally[0]} never")
    print(f"epoch {epoch} counts per sample: {' '.join(str(job.get(i, 0)) for i in range(samples))}")
    return figures
