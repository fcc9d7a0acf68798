"""Scenario 36's three jobs, run in each rank of a torchrun job (imported by the scripts, not run).

run_jobs(train, rank, world) runs train(job) for three jobs over the same stream, one after another:

- "continuous": one run, from the stream's first batch to its end;
- "resumed once": its first run stops right after its checkpoint at step 6; a second run resumes
  from that checkpoint and goes to the end;
- "resumed twice": stops after step 6, resumes, stops again after its checkpoint at step 9 (a
  checkpoint the *resumed* run wrote), and resumes once more to the end.

A stop is a preemption that lands right after a checkpoint was written: job.save() writes it and
raises Preempted, which ends train(); the run's loader and its workers go with it.  The next run
builds its loader anew and reads the checkpoint back from disk (torch.load, weights_only), as a
relaunched job does; torchrun itself is launched once, because a launch costs 5-15 s on 2 cores
and starting the ranks again changes nothing that the loader's state holds.

The "model" is what a run trained on: state["trained_on"], a list of sample indices per step,
saved and restored with the checkpoint as weights are; its final value is what the job trained on
across its runs.  report(...) compares each resumed job with the continuous one, per rank and per
sample, prints it, and returns the figures the scripts print as `metric` lines.
"""
import gc
import os
import tempfile
from collections import Counter

import torch
import torch.distributed as dist

SAVE_EVERY = 3  # steps between checkpoints
JOBS = {"continuous": (), "resumed once": (6,), "resumed twice": (6, 9)}  # the steps a run is stopped after


class Preempted(Exception):
    """The scheduler ends the run right after a checkpoint (raised by Job.save)."""


class Job:
    """What train(job) gets: this rank, its checkpoint, its training step."""

    def __init__(self, folder, rank, world, stop_at, resumed):
        self.rank, self.world = rank, world
        self.path = os.path.join(folder, f"checkpoint-rank{rank}.pt")  # each rank its own, as DCP keeps them
        self.stop_at = stop_at
        self.resumed = resumed  # (step of the checkpoint, step its loader state holds), the job's every resume
        self.trained_on = None

    def resume(self):
        """The last checkpoint's state, or None on a first start."""
        if not os.path.exists(self.path):
            return None
        state = torch.load(self.path, weights_only=True)
        self.resumed.append((len(state["trained_on"]), loader_step(state.get("loader"))))
        return state

    def train_step(self, state, indices):
        """The model learns from these samples (state["trained_on"] stands for its weights)."""
        state["trained_on"].append(indices.tolist())

    def save(self, state):
        """Write the checkpoint whole or not at all; at a stop, the run ends here."""
        torch.save(state, self.path + ".part")
        os.replace(self.path + ".part", self.path)
        if len(state["trained_on"]) == self.stop_at:
            raise Preempted

    def finish(self, state):
        """The run reached the stream's end: what the job trained on, all runs together."""
        self.trained_on = state["trained_on"]


def loader_step(state):
    """The batch count a StatefulDataLoader's state holds: what torchdata fast-forwards by when the
    dataset keeps no state (`_snapshot_step` with workers, `_num_yielded` without); None otherwise."""
    if not isinstance(state, dict):
        return None
    if "_snapshot" in state:
        return state["_snapshot"]["_snapshot_step"] + state.get("_steps_since_snapshot", 0)
    return state.get("_num_yielded", state.get("batches_yielded"))  # the last: broken_single_shot_skip.py's


def run_job(train, rank, world, stops):
    """One job in this process: a run per stop and one to the end, in a folder of its own; what it
    trained on, its resumes (checkpoint step, loader state step) and its runs."""
    resumed, runs = [], 0
    with tempfile.TemporaryDirectory(prefix=f"clinic-36-rank{rank}-") as folder:
        for stop_at in (*stops, None):
            job = Job(folder, rank, world, stop_at, resumed)
            runs += 1
            try:
                train(job)
            except Preempted:
                pass
            gc.collect()  # the stopped run's loader and its workers go now, not at some later collection
    return {"trained_on": job.trained_on, "resumed": resumed, "runs": runs}


def run_jobs(train, rank, world):
    """The three jobs in this rank; every rank's results, gathered (all_gather_object), and the process
    group closed."""
    mine = {name: run_job(train, rank, world, stops) for name, stops in JOBS.items()}
    every = [None] * world
    dist.all_gather_object(every, mine)
    dist.destroy_process_group()
    return every


def _compare(job, reference):
    counts = Counter(i for step in job["trained_on"] or [] for i in step)
    wanted = {i for step in reference["trained_on"] or [] for i in step}
    steps, continuous = job["trained_on"] or [], reference["trained_on"] or []
    unlike = sum(a != b for a, b in zip(steps, continuous)) + abs(len(steps) - len(continuous))
    return {"steps": len(steps), "repeated": sum(counts[i] > 1 for i in wanted),
            "never": sum(counts[i] == 0 for i in wanted), "outside": len(set(counts) - wanted), "unlike": unlike}


def _as_continuous(job, reference):
    """Each step the job trained, as the number of the continuous job's step with the same batch ("?": none)."""
    steps = {tuple(batch): str(n) for n, batch in enumerate(reference["trained_on"] or [], 1)}
    return [steps.get(tuple(batch), "?") for batch in job["trained_on"] or []]


def report(every):
    """Print each rank's jobs against its continuous one; return the figures."""
    figures = {"ranks": len(every), "samples_wrong": 0, "steps_unlike_continuous": 0}
    for rank, jobs in enumerate(every):
        reference = jobs["continuous"]
        share = len({i for step in reference["trained_on"] or [] for i in step})
        print(f"rank {rank}: continuous: {len(reference['trained_on'] or [])} steps, {share} samples, each once")
        figures[f"samples_rank{rank}"] = share
        for name in ("resumed once", "resumed twice"):
            job, key = jobs[name], name.replace(" ", "_")
            seen = _compare(job, reference)
            resumes = ", ".join(f"step {step} (its loader state: step {held})" for step, held in job["resumed"])
            print(f"rank {rank}: {name}: {job['runs']} runs, resumed at {resumes or 'no step'}; trained "
                  f"{seen['steps']} steps: {seen['repeated']} of {share} samples twice or more, {seen['never']} never; "
                  f"{seen['unlike']} steps unlike the continuous job's")
            print(f"rank {rank}: {name}: the continuous job's steps, in the order trained: "
                  f"{' '.join(_as_continuous(job, reference))}")
            figures[f"{key}_repeated_rank{rank}"] = seen["repeated"] + seen["outside"]
            figures[f"{key}_never_rank{rank}"] = seen["never"]
            figures[f"{key}_runs_rank{rank}"] = job["runs"]
            figures["samples_wrong"] += seen["repeated"] + seen["outside"] + seen["never"]
            figures["steps_unlike_continuous"] += seen["unlike"]
        second = jobs["resumed twice"]["resumed"][1:2] or [(0, 0)]
        figures[f"second_resume_step_rank{rank}"], figures[f"second_resume_loader_step_rank{rank}"] = second[0]
    return figures
