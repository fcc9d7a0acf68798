"""Give every DataLoader worker shards of a Hugging Face streamed dataset, or say why it cannot be done.

Fixes scenario 22 (fewer shards than workers): a `datasets.IterableDataset` in a
`DataLoader` hands each worker whole shards, worker k of N taking shards k, k+N, k+2N, …
(one shard per Parquet, JSON or CSV file; `Dataset.to_iterable_dataset(num_shards=…)` sets
the number). With fewer shards than workers the last workers get nothing: the library logs
"Too many dataloader workers: N (max is dataset.num_shards=S). Stopping N-S dataloader
workers." once, from worker 0, and the epoch runs at the speed of S workers. With more shards
but not a multiple of N (5 over 4), worker 0 reads two shards while the others read one,
and the epoch lasts as long as worker 0.

    from reshard_for_workers import reshard_for_workers

    stream = load_dataset("parquet", data_files=files, split="train", streaming=True)
    stream = reshard_for_workers(stream, num_workers=4)  # before shuffle() and map()
    loader = DataLoader(stream.shuffle(seed=0).map(decode), batch_size=32, num_workers=4)

`reshard_for_workers` keeps the dataset if its shards already divide evenly among the
workers; otherwise it asks `dataset.reshard()` for more (datasets >= 4.6: a Parquet file
becomes one shard per row group; other formats cannot be split and keep their count), keeps
whichever of the two loads the workers more evenly, and raises ValueError, naming the
numbers and the remedies, if a worker would still get no shard. It needs only `num_shards`
and `reshard()`, so it imports nothing. Call it before `shuffle()`: `reshard()` after
`shuffle()` works, but the new shards are then read in file order.
"""


def shards_per_worker(num_shards, num_workers):
    """How many shards each of `num_workers` DataLoader workers gets: worker k takes shards k, k+N, …"""
    return [len(range(worker, num_shards, num_workers)) for worker in range(num_workers)]


def worker_load(num_shards, num_workers):
    """The share of the workers' time spent reading, if shards are of equal size: 1.0 when every
    worker gets as many shards as the busiest, 0.75 for 3 shards over 4 workers (one idles),
    0.625 for 5 over 4 (worker 0 reads two, the others one and then wait)."""
    busiest = max(shards_per_worker(num_shards, num_workers), default=0)
    return num_shards / (busiest * num_workers) if busiest else 0.0


def reshard_for_workers(dataset, num_workers):
    """`dataset`, or `dataset.reshard()` if that spreads the shards more evenly over `num_workers`
    DataLoader workers; ValueError if a worker would still get no shard."""
    if num_workers < 1:  # num_workers=0: the main process reads every shard itself
        return dataset
    best = dataset
    if dataset.num_shards % num_workers:
        reshard = getattr(dataset, "reshard", None)  # datasets < 4.6 has none: keep what there is
        resharded = reshard() if reshard else dataset
        if worker_load(resharded.num_shards, num_workers) > worker_load(dataset.num_shards, num_workers):
            best = resharded
    if best.num_shards < num_workers:
        raise ValueError(
            f"dataset.num_shards={best.num_shards} (after reshard()) for num_workers={num_workers}: "
            f"{num_workers - best.num_shards} DataLoader workers would get no data. Write the data in "
            f"at least {num_workers} files (a multiple of {num_workers} keeps every worker busy), build "
            f"it with Dataset.to_iterable_dataset(num_shards={num_workers}), store it as Parquet with "
            f"several row groups per file, or use num_workers={best.num_shards}.")
    return best
