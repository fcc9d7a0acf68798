"""Scenario 36, broken by hand: a resume that skips batches once, and counts only what it yielded since.

    python scenarios/36_second_resume/broken_single_shot_skip.py   # exits 1: resumed twice, 24 samples twice per rank

broken.py's job, without torchdata: a plain DataLoader over the same stream (2 forked workers per
rank, batches of 4), wrapped in a small resumable loader of the kind training frameworks write
themselves (KempnerForge's, issue #57).  Its state_dict() is the number of batches it yielded;
load_state_dict() turns that number into a skip that iter() applies once, and iter() starts
counting from 0 again.  The first resume skips 6 and is exact; the resumed run yielded 3 batches
when it wrote its checkpoint at step 9, so its state says 3, and the second resume skips 3 where 9
were trained: 6 batches, 24 samples per rank, trained twice.  No warning at all.  The fix, one
line: iter() starts its count at the skip (`self.yielded = skip`), so the count stays the
epoch's, however many resumes it crosses (KempnerForge PR #58); or give the stream a state of its
own, as fixed.py does.
"""
import sys

import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from _three_jobs import SAVE_EVERY, report, run_jobs
from scenarios.torchrun_ranks import as_torchrun_job

STREAM, BATCH, WORKERS = 192, 4, 2


class NumberedStream(IterableDataset):
    """This rank's share of the stream, split again among the loader's workers."""

    def __init__(self, rank, world):
        self.rank, self.world = rank, world

    def __iter__(self):
        worker = get_worker_info()
        first, step = (worker.id, worker.num_workers) if worker else (0, 1)
        for index in range(self.rank, STREAM, self.world)[first::step]:
            yield {"index": index, "x": torch.full((4,), float(index))}


class SkippingLoader:
    """A DataLoader that resumes by skipping the batches its state counts."""

    def __init__(self, dataset):
        self.loader = DataLoader(dataset, BATCH, num_workers=WORKERS, multiprocessing_context="fork")
        self.yielded, self.skip = 0, 0

    def state_dict(self):
        return {"batches_yielded": self.yielded}

    def load_state_dict(self, state):
        self.skip = state["batches_yielded"]  # applied by the next iter() only

    def __iter__(self):
        skip, self.skip, self.yielded = self.skip, 0, 0  # BUG: the count restarts at 0, not at the skip
        for position, batch in enumerate(self.loader):
            if position >= skip:
                self.yielded += 1
                yield batch


def train(job):
    loader = SkippingLoader(NumberedStream(job.rank, job.world))
    state = job.resume() or {"trained_on": []}
    if "loader" in state:
        loader.load_state_dict(state["loader"])
    for batch in loader:
        job.train_step(state, batch["index"])  # a real loop trains on batch["x"] here
        if len(state["trained_on"]) % SAVE_EVERY == 0:
            job.save(dict(state, loader=loader.state_dict()))  # a preempted run ends right after its checkpoint
    job.finish(state)


def main():
    rank, world = as_torchrun_job(nproc=2, timeout_s=60)
    every = run_jobs(train, rank, world)  # the three jobs in every rank, gathered
    if rank != 0:
        return
    figures = report(every)
    for name, value in figures.items():
        print(f"metric {name}={value}")
    if figures["samples_wrong"]:
        repeated = [figures[f"resumed_twice_repeated_rank{r}"] for r in range(world)]
        sys.exit(f"resumed twice, the ranks trained on {repeated} of their {STREAM // world} samples twice; the "
                 f"checkpoint of step {figures['second_resume_step_rank0']} held a skip of "
                 f"{figures['second_resume_loader_step_rank0']} batches")
    print(f"continuous, resumed once and resumed twice: each of the {world} ranks trained on each of its "
          f"{STREAM // world} samples exactly once")


if __name__ == "__main__":
    main()
