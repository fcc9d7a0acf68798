"""Scenario 38, measured: a streamed Hugging Face dataset's shuffle buffer over the same corpus, sorted by source.

    python scenarios/38_shuffle_buffer_too_local/measure_datasets_stream.py

The 192 samples of broken.py written as 12 parquet files, one source after another, streamed with
datasets' load_dataset(..., streaming=True) through a DataLoader with 2 workers in batches of 8, one
epoch each way; the sources in each batch counted as broken.py counts them.  IterableDataset.shuffle
shuffles the order of the files and passes the rows through a buffer; since huggingface/datasets#8194
it also feeds that buffer from up to `max_buffer_input_shards` files at once (default 10), read in turn
inside each worker.  Ways measured, each with a buffer of 8 rows but the last:
  one_file_at_a_time   shuffle(seed, buffer_size=8, max_buffer_input_shards=1): the buffer fed file by
                       file, as before that change
  take_before_shuffle  .take(192) before .shuffle(seed, buffer_size=8): take() fixes the file order, so
                       the buffer is fed one file at a time again, whatever max_buffer_input_shards says
  files_at_once        shuffle(seed, buffer_size=8): datasets 5.2.0's default, each worker's 6 files at once
  interleaved_sources  one stream per source, interleave_datasets(…, stopping_strategy=
                       "all_exhausted_without_replacement"), then shuffle(seed, buffer_size=8,
                       max_buffer_input_shards=1): the sources mixed by name, whatever the files hold
  whole_corpus_buffer  shuffle(seed, buffer_size=192, max_buffer_input_shards=1): a buffer as large as the
                       data, which mixes by holding all of it
"""
import contextlib
import io
import logging
import os
import tempfile

import torch
from torch.utils.data import DataLoader

from _sorted_shards import SAMPLES, SHARDS_PER_SOURCE, SOURCES, PER_SHARD, full_shuffle_distinct, report

BATCH, BUFFER = 8, 8


def write_files(root):
    """The corpus as parquet files named by source, as `sorted(glob("*.parquet"))` lists them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    paths = []
    for shard in range(len(SOURCES) * SHARDS_PER_SOURCE):
        source, k = SOURCES[shard // SHARDS_PER_SOURCE], shard % SHARDS_PER_SOURCE
        path = os.path.join(root, f"{source}-{k:05d}.parquet")
        pq.write_table(pa.table({"idx": list(range(shard * PER_SHARD, (shard + 1) * PER_SHARD))}), path)
        paths.append(path)
    return sorted(paths)


def streams(paths):
    from datasets import interleave_datasets, load_dataset

    def stream(files):
        return load_dataset("parquet", data_files=files, split="train", streaming=True)

    per_source = [stream([p for p in paths if os.path.basename(p).startswith(f"{s}-")]) for s in SOURCES]
    mixed = interleave_datasets(per_source, seed=0, stopping_strategy="all_exhausted_without_replacement")
    return {
        "one_file_at_a_time": stream(paths).shuffle(seed=0, buffer_size=BUFFER, max_buffer_input_shards=1),
        "take_before_shuffle": stream(paths).take(SAMPLES).shuffle(seed=0, buffer_size=BUFFER),
        "files_at_once": stream(paths).shuffle(seed=0, buffer_size=BUFFER),
        "interleaved_sources": mixed.shuffle(seed=0, buffer_size=BUFFER, max_buffer_input_shards=1),
        "whole_corpus_buffer": stream(paths).shuffle(seed=0, buffer_size=SAMPLES, max_buffer_input_shards=1),
    }


def epoch(dataset):
    loader = DataLoader(dataset.with_format("torch"), batch_size=BATCH, num_workers=2)
    return [batch["idx"].tolist() for batch in loader]


def main():
    torch.manual_seed(0)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # local files only: nothing to ask the Hub
    logging.getLogger("datasets").setLevel(logging.ERROR)
    print(f"a full shuffle mixes {full_shuffle_distinct(BATCH)} of {len(SOURCES)} sources in a batch of {BATCH}")
    with tempfile.TemporaryDirectory(prefix="clinic-38-parquet-") as root:
        for name, dataset in streams(write_files(root)).items():
            with contextlib.redirect_stdout(io.StringIO()):  # the batch-by-batch lines: broken.py shows them
                figures = report(epoch(dataset))
            for figure in ("samples", "unseen", "distinct_sources_per_batch", "one_source_batches",
                           "fewest_sources_in_a_worker"):
                print(f"metric {name}_{figure}={figures[figure]}")
            print(f"{name}: {figures['distinct_sources_per_batch']} sources a batch, "
                  f"{figures['one_source_batches']} of {figures['batches']} batches of one source, "
                  f"{figures['fewest_sources_in_a_worker']} sources in the poorer worker, "
                  f"{figures['samples']} samples, {figures['unseen']} unseen")


if __name__ == "__main__":
    main()
