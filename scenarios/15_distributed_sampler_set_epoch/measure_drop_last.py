"""Scenario 15, measured: the two drop_last options against the sampler's padding.

    python scenarios/15_distributed_sampler_set_epoch/measure_drop_last.py

The same 2 ranks, 101 samples and 4 epochs as fixed.py (set_epoch called through
fixes/epoch_loop.py), read by two loaders in each rank, with persistent workers:
- DistributedSampler(drop_last=True): each rank gets 50 samples, no padding; one
  sample a epoch is left out, a different one each epoch since the order changes.
- DataLoader(drop_last=True) over the padded sampler: each rank drops its own last
  incomplete batch (51 = 6 x 8 + 3), so 6 sample slots a epoch are lost.
fixed.py shows the third case, the default: one padding duplicate, nothing lost.
"""
from torch.utils.data import DataLoader, DistributedSampler

from _two_ranks import WORLD_SIZE, report, run_two_ranks
from fixed import EPOCHS, SAMPLES, NumberedSamples
from fixes.epoch_loop import epochs

SHOWN = ("distinct_orders_per_rank", "samples_per_rank", "padding_duplicates_per_epoch", "shared_beyond_padding",
         "unseen_per_epoch", "unseen_in_run")


def train(rank):
    dataset = NumberedSamples()
    # Persistent workers, started once per loader: the sampler runs in the rank's main
    # process, so set_epoch reaches it all the same (and 12 fewer worker starts per rank).
    options = {"batch_size": 8, "num_workers": 2, "multiprocessing_context": "fork",
               "persistent_workers": True}
    loaders = {
        "sampler_drop_last": DataLoader(
            dataset, **options,
            sampler=DistributedSampler(dataset, num_replicas=WORLD_SIZE, rank=rank, drop_last=True)),
        "loader_drop_last": DataLoader(
            dataset, **options, drop_last=True,
            sampler=DistributedSampler(dataset, num_replicas=WORLD_SIZE, rank=rank)),
    }
    orders = {}
    for name, loader in loaders.items():
        orders[name] = [[i for batch in loader for i in batch["index"].tolist()]
                        for _ in epochs(loader, EPOCHS)]
    return orders


def main():
    gathered = run_two_ranks(train)
    for name in gathered[0]:
        print(f"{name}:")
        figures = report([rank[name] for rank in gathered], SAMPLES)
        for figure in SHOWN:
            value = figures[figure]
            print(f"metric {name}_{figure}={value}")
        print(f"{name}: {figures['samples_per_rank']} samples per rank, "
              f"{figures['unseen_per_epoch']} of {SAMPLES} left out per epoch, "
              f"{figures['unseen_in_run']} never seen in {EPOCHS} epochs")


if __name__ == "__main__":
    main()
