"""Uses 3 workers, one per Parquet file. Every worker is busy, and the run has a worker fewer
than the exercise's 4.
"""
import urllib.request

from datasets import load_dataset
from torch.utils.data import DataLoader, get_worker_info

from _parquet_corpus import check_epoch, corpus, epoch


def fetch_image(row, url):
    with urllib.request.urlopen(f"{url}/{row['key']}") as response:
        row["image"] = response.read()
    row["worker"] = get_worker_info().id  # who loaded it: the evidence, not part of the bug
    return row


def main(shuffle=False):
    with corpus(files=3) as (parquet_files, cache_dir, bucket):
        stream = load_dataset("parquet", data_files=parquet_files, split="train",
                              streaming=True, cache_dir=cache_dir)
        # BUG: one shard per Parquet file, 3 shards for 4 workers: worker 3 is given nothing.
        if shuffle:
            stream = stream.shuffle(seed=0, buffer_size=64)
        stream = stream.map(fetch_image, fn_kwargs={"url": bucket})
        loader = DataLoader(stream, batch_size=16, num_workers=3)
        check_epoch(stream, *epoch(loader))


if __name__ == "__main__":
    main()
