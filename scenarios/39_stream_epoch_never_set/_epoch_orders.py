"""What the loop received, epoch by epoch, for scenario 39's scripts (imported by them).

corpus(shards, per_shard) is a `datasets` IterableDataset of shards, as a streamed corpus of
files is: each record's id is its place in the corpus, so an order is a list of ids.
report(orders, label, batch) prints the first ids of every epoch, under the label, and returns the figures the scripts
print as `metric` lines; orders[epoch] is the ids in the order the training loop received them.
"""
from datasets import IterableDataset


def _records(shards, per_shard):
    for shard in shards:  # a shard is a file of the corpus; datasets hands each worker its own
        for line in range(per_shard):
            yield {"id": shard * per_shard + line}


def corpus(shards, per_shard):
    return IterableDataset.from_generator(_records, gen_kwargs={"shards": list(range(shards)),
                                                                "per_shard": per_shard})


def report(orders, label, batch):
    """Later epochs whose order an earlier epoch had; batches equal to the batch at the same step
    of the epoch before (what the model trains on at step k, one epoch apart); whole epochs."""
    samples = len(orders[0])
    for epoch, order in enumerate(orders):
        print(f"{label}, epoch {epoch}: first ids {order[:8]}...")
    return {
        "epochs_repeating_order": sum(order in orders[:epoch] for epoch, order in enumerate(orders)),
        "batches_as_last_epoch": sum(orders[epoch][step:step + batch] == orders[epoch - 1][step:step + batch]
                                     for epoch in range(1, len(orders)) for step in range(0, samples, batch)),
        "complete_epochs": sum(sorted(order) == list(range(samples)) for order in orders),
    }
