"""Give each DataLoader worker its own share of a stream, so that an epoch holds every sample once.

Fixes scenario 13 (an IterableDataset yields every sample once per worker): with
`num_workers=N` the DataLoader hands each of the N workers its own copy of an IterableDataset
and runs every copy to its end, so unless `__iter__` asks which worker it is in, the epoch
holds each sample N times. `torch.utils.data.get_worker_info()` answers that question inside a
worker (it returns None in the main process, where nothing needs splitting).

Three ways to use it, from the one that reads least to the one that changes least:

    from shard_by_worker import ShardByWorker, shard_by_worker, worker_share

    class ShardStream(IterableDataset):
        def __iter__(self):
            # whole files per worker when there are at least as many files as workers,
            # otherwise every file is read by every worker and each keeps every N-th record
            yield from shard_by_worker(self.files, read_shard)

    for line in worker_share(open(path)): ...            # any iterable: items k, k+N, k+2N, …

    DataLoader(ShardByWorker(their_stream), num_workers=4)  # a stream you cannot edit

Each worker forms its own batches: with `batch_size=B` every worker ends its share with its
own short batch (or, with `drop_last=True`, drops up to B-1 samples), so an epoch can hold
more batches than `len(loader)` says, or drop more samples than with `num_workers=0`.
Do not wrap a stream that already splits itself by worker: each worker would keep a share
of a share.
"""
import itertools

from torch.utils.data import IterableDataset, get_worker_info


def _this_worker():
    """(worker id, number of workers); (0, 1) in the main process."""
    info = get_worker_info()
    return (0, 1) if info is None else (info.id, info.num_workers)


def worker_share(items):
    """Yield this worker's share of `items`: items k, k+N, k+2N, … in worker k of N; all of them
    in the main process. A generator, so it asks which worker it is in when it is iterated
    (in the worker), not when it is created."""
    worker, workers = _this_worker()
    yield from itertools.islice(items, worker, None, workers)


def shard_by_worker(files, read):
    """Yield the records of this worker's share of `files`; `read(file)` yields one file's records.

    With at least as many files as workers, worker k reads whole files k, k+N, …: each file is
    opened by one worker only, but a worker may get one file more than another (5 files over 4
    workers: worker 0 reads two), and the epoch lasts as long as the busiest worker. With fewer
    files than workers, whole files would leave workers idle, so every worker reads every
    file and keeps records k, k+N, … of their concatenation: balanced, at N times the reading.
    """
    files = list(files)
    worker, workers = _this_worker()
    if len(files) >= workers:
        for file in files[worker::workers]:
            yield from read(file)
    else:
        records = itertools.chain.from_iterable(map(read, files))
        yield from itertools.islice(records, worker, None, workers)


class ShardByWorker(IterableDataset):
    """Wrap any re-iterable stream (an IterableDataset, a list, an object whose `__iter__` opens
    the files) so that worker k of N yields its records k, k+N, …. Every worker still reads the
    whole stream and throws away N-1 of each N records; if the stream is made of files, prefer
    `shard_by_worker` inside its `__iter__`. `len()` is the wrapped stream's, which is now the
    true number of samples per epoch (a TypeError, as for any object without a length, if the
    stream has none)."""

    def __init__(self, stream):
        self.stream = stream

    def __iter__(self):
        return worker_share(self.stream)

    def __len__(self):
        return len(self.stream)

    def __repr__(self):
        return f"ShardByWorker({self.stream!r})"
