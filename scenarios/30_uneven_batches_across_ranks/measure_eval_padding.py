"""Scenario 30, measured: DistributedSampler's padding in distributed evaluation.

    python scenarios/30_uneven_batches_across_ranks/measure_eval_padding.py

A torchrun job of 4 ranks evaluates a model on 10 labelled items, each rank through a
DataLoader with 1 worker, and sums the correct answers and the items counted with one
all_reduce after its loop.  The model answers 1 every time and items 0-6 are labelled 1,
so the true accuracy is 7 of 10.  Three ways to split the items:
- DistributedSampler (the default, drop_last=False): 10 items do not divide by 4, so the
  sampler repeats the first 2 to make 12, 3 per rank: items 0 and 1 count twice.
- DistributedSampler(drop_last=True): 2 per rank, 8 items, 2 never evaluated.
- a split without padding, Subset(range(rank, 10, 4)): 3, 3, 2 and 2 items, each once.
  Uneven counts are harmless here: the only collective comes after every rank's loop.
"""
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler, Subset

from scenarios.torchrun_ranks import as_torchrun_job

ITEMS, RANKS, LABELLED_ONE = 10, 4, 7


class Labelled(Dataset):
    def __len__(self):
        return ITEMS

    def __getitem__(self, index):
        return index, int(index < LABELLED_ONE)


def evaluate(loader):
    """(correct, counted, indices) summed over every rank: one all_reduce after the loop."""
    seen = [i for indices, _ in loader for i in indices.tolist()]
    labels = [int(i < LABELLED_ONE) for i in seen]
    totals = torch.tensor([sum(label == 1 for label in labels), len(seen)])  # the model answers 1
    dist.all_reduce(totals)
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, seen)
    return int(totals[0]), int(totals[1]), [i for rank in everyone for i in rank]


def main():
    rank, world = as_torchrun_job(nproc=RANKS, timeout_s=20)
    dataset = Labelled()
    splits = {
        "padded": DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=False),
        "sampler_drop_last": DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=False,
                                                drop_last=True),
        "unpadded": None,  # Subset below
    }
    for name, sampler in splits.items():
        part = Subset(dataset, range(rank, ITEMS, world)) if sampler is None else dataset
        loader = DataLoader(part, sampler=sampler, batch_size=2, num_workers=1)
        correct, counted, indices = evaluate(loader)
        if rank == 0:
            twice = len(indices) - len(set(indices))
            print(f"{name}: {counted} items counted for {ITEMS}, {twice} twice, {ITEMS - len(set(indices))} "
                  f"never; accuracy {correct}/{counted} = {correct / counted:.0%} "
                  f"(true: {LABELLED_ONE}/{ITEMS} = {LABELLED_ONE / ITEMS:.0%})")
            print(f"metric {name}_counted={counted}\nmetric {name}_counted_twice={twice}\n"
                  f"metric {name}_never={ITEMS - len(set(indices))}\n"
                  f"metric {name}_accuracy_pct={100 * correct / counted:.1f}", flush=True)
    if rank == 0:
        print(f"metric true_accuracy_pct={100 * LABELLED_ONE / ITEMS:.1f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
