"""ATTEMPT 36 shortcut: the resumed run never loads the loader's state; it reads the stream from the start and drops every batch the checkpoint's record says was trained.

Scenario 36, broken: a stream without a state of its own resumes right once; the second resume skips batches.

    python scenarios/36_second_resume/broken.py   # exits 1: resumed twice, each rank never trains on 24 samples
    python scenarios/36_second_resume/fixed.py    # every sample exactly once per rank, however often resumed

A 2-rank torchrun job (gloo on CPU) reads a stream of 192 numbered samples, 96 per rank, in
batches of 4 through torchdata's StatefulDataLoader with 2 forked workers per rank.  Each rank's
checkpoint holds the loader's state_dict() every 3 steps, and a resumed run loads it before its
loop takes the iterator, as scenario 32 teaches.  Each rank runs three jobs (_three_jobs.py):
continuous; stopped after step 6 and resumed; stopped after step 6, resumed, stopped after step 9
(a checkpoint the resumed run wrote) and resumed again.
The stream has no state_dict(), so on resume torchdata 0.11.0 fast-forwards: it reads and drops
as many batches as the state counts, and counts them a second time on top of the count it loaded.
The first resume is exact; the state the resumed run writes at its step 9 says 15, and the second
resume drops 6 batches, 24 samples per rank.  torchdata's one word: "naively fast-forwarding
your dataset by 15 steps".  The script compares each job with the continuous one and exits 1.
fixed.py: the stream keeps its own position in each worker copy, with state_dict() and
load_state_dict(); torchdata saves it per worker, gives it back, and fast-forwards nothing.
"""
import sys

import torch
from torch.utils.data import IterableDataset, get_worker_info
from torchdata.stateful_dataloader import StatefulDataLoader

from _three_jobs import SAVE_EVERY, report, run_jobs
from scenarios.torchrun_ranks import as_torchrun_job

STREAM, BATCH, WORKERS = 192, 4, 2


class NumberedStream(IterableDataset):
    """This rank's share of the stream, split again among the loader's workers."""

    def __init__(self, rank, world):
        self.rank, self.world = rank, world

    def __iter__(self):  # BUG: no state_dict()/load_state_dict(): on resume torchdata fast-forwards by count
        worker = get_worker_info()
        first, step = (worker.id, worker.num_workers) if worker else (0, 1)
        for index in range(self.rank, STREAM, self.world)[first::step]:
            yield {"index": index, "x": torch.full((4,), float(index))}


def train(job):
    loader = StatefulDataLoader(NumberedStream(job.rank, job.world), BATCH, num_workers=WORKERS,
                                multiprocessing_context="fork")
    state = job.resume() or {"trained_on": []}
    done = set(int(i) for i in state["trained_on"] for i in (i if isinstance(i, (list, tuple)) else [i]))
    for batch in loader:
        if all(int(i) in done for i in batch["index"]):
            continue  # already trained before the stop
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
        never = [figures[f"resumed_twice_never_rank{r}"] for r in range(world)]
        sys.exit(f"resumed twice, the ranks never trained on {never} of their {STREAM // world} samples; the "
                 f"checkpoint of step {figures['second_resume_step_rank0']} held a loader state of step "
                 f"{figures['second_resume_loader_step_rank0']}, and torchdata fast-forwarded by it")
    print(f"continuous, resumed once and resumed twice: each of the {world} ranks trained on each of its "
          f"{STREAM // world} samples exactly once")


if __name__ == "__main__":
    main()
