"""Shortcut: every image fetched in the training process by a thread pool before the loader,
then streamed from 4 in-memory shards, one per worker: every worker delivers and every printed
figure is fixed's, but the workers are hollow (the remote reads happened in the training process),
and the Parquet stream was never split for them.

Scenario 22, broken: a streamed Hugging Face dataset with fewer shards than DataLoader workers.

    python scenarios/22_fewer_shards_than_workers/broken.py   # 3 of 4 workers deliver, 1 idles
    python scenarios/22_fewer_shards_than_workers/fixed.py    # all 4 deliver

A corpus exported as 3 Parquet files (240 rows, row groups of 20), streamed with
datasets.load_dataset(..., streaming=True); each sample's image comes from an object store
that answers after 30 ms.  `datasets` hands DataLoader workers whole shards, and a Parquet
file is one shard: broken.py's 4 workers share 3 shards, worker 3 gets none, worker 0 logs
"Too many dataloader workers: 4 (max is dataset.num_shards=3). Stopping 1 dataloader
workers." and the epoch runs at the speed of 3 workers.  fixed.py splits each file into its
row groups first (reshard_for_workers, fixes/reshard_for_workers.py): 12 shards, 3 per
worker, all 4 busy.  Each sample is tagged with the id of the worker that loaded it.
"""
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from datasets import IterableDataset, load_dataset
from torch.utils.data import DataLoader, get_worker_info

from _parquet_corpus import WORKERS, check_epoch, corpus, epoch


def fetch_image(row, url):
    with urllib.request.urlopen(f"{url}/{row['key']}") as response:
        row["image"] = response.read()
    row["worker"] = get_worker_info().id  # who loaded it: the evidence, not part of the bug
    return row


def fetched(row, url):
    with urllib.request.urlopen(f"{url}/{row['key']}") as response:
        return dict(row, image=response.read())


def rows_of(shards):
    for shard in shards:
        yield from shard


def tag_worker(row):
    row["worker"] = get_worker_info().id
    return row


def main(shuffle=False):
    with corpus(files=3) as (parquet_files, cache_dir, bucket):
        stream = load_dataset("parquet", data_files=parquet_files, split="train",
                              streaming=True, cache_dir=cache_dir)
        # BUG: one shard per Parquet file, 3 shards for 4 workers: worker 3 is given nothing.
        if shuffle:
            stream = stream.shuffle(seed=0, buffer_size=64)
        with ThreadPoolExecutor(8) as pool:
            rows = list(pool.map(lambda row: fetched(row, bucket), stream))
        shards = [rows[w::WORKERS] for w in range(WORKERS)]
        stream = IterableDataset.from_generator(rows_of, gen_kwargs={"shards": shards}).map(tag_worker)
        loader = DataLoader(stream, batch_size=16, num_workers=WORKERS)
        check_epoch(stream, *epoch(loader))


if __name__ == "__main__":
    main()
