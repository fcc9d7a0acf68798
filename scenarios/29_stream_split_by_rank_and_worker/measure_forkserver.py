"""Scenario 29, measured: fixed.py's pipeline with forkserver workers (Python 3.14's default on Linux).

    python scenarios/29_stream_split_by_rank_and_worker/measure_forkserver.py

wds.split_by_node runs where the pipeline runs: in the DataLoader worker.  It asks for the rank
there: the RANK and WORLD_SIZE environment variables first, else torch.distributed's process
group.  A forked worker inherits the rank's process group; a worker started by a fork server (or
spawned) does not, and knows its rank only from the environment.  Two launches of the same job:
- as_torchrun: the ranks have RANK and WORLD_SIZE in their environment (torchrun sets them, and so
  does _two_ranks.py): the forkserver workers split by rank, as fixed.py's forked ones do;
- without_rank_env: the same process group, started as torch.multiprocessing.spawn scripts start it
  (init_method="tcp://…", rank= and world_size= as arguments, nothing in the environment): the
  workers see one process, split_by_node passes every shard through, and both ranks train on all
  96 samples without a word.
"""
import os

from torch.utils.data import DataLoader

from _two_ranks import report, run_two_ranks
from fixed import shard_stream

SHOWN = ("samples_per_rank", "on_both_ranks", "unseen", "passes_over_the_data")


def train(urls, keep_rank_env=True):
    if not keep_rank_env:  # the process group is up; only the environment differs
        for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"):
            del os.environ[name]
    loader = DataLoader(shard_stream(urls), batch_size=8, num_workers=2, multiprocessing_context="forkserver")
    return [i for batch in loader for i in batch.tolist()]


def without_rank_env(urls):
    return train(urls, keep_rank_env=False)


def main():
    for name, launch in (("as_torchrun", train), ("without_rank_env", without_rank_env)):
        print(f"{name}:")
        figures = report(run_two_ranks(launch))
        for figure in SHOWN:
            print(f"metric {name}_{figure}={figures[figure]}")
        print(f"{name}: forkserver workers, {figures['samples_per_rank']} samples per rank, "
              f"{figures['on_both_ranks']} on both ranks, {figures['unseen']} unseen")


if __name__ == "__main__":
    main()
