"""Scenario 38, measured: broken.py's pipeline with larger buffers and without workers, and what each holds.

    python scenarios/38_shuffle_buffer_too_local/measure_buffer_size.py

broken.py's corpus (6 sources, 2 shards of 16 samples each) and pipeline (the worker's shards
shuffled, then wds.shuffle(buffer)) for one epoch each way, in batches of 8:
  buffer_8, buffer_16, buffer_32, buffer_96   2 workers, a buffer of that many samples in each; 96 is all
                                              of a worker's samples
  buffer_8_no_workers                         the same buffer of 8 in the training process itself: one
                                              buffer over all 12 shards, read one after another
Each is measured as broken.py measures it: the sources in each batch, and the samples a worker must
have held in its buffer (the fewest its batches prove, a count with no chance in it).
"""
import contextlib
import io
import tempfile

import torch
import webdataset as wds
from torch.utils.data import DataLoader

from _sorted_shards import full_shuffle_distinct, report, write_shards

BATCH = 8
WAYS = {"buffer_8": (8, 2), "buffer_16": (16, 2), "buffer_32": (32, 2), "buffer_96": (96, 2),
        "buffer_8_no_workers": (8, 0)}


def shard_stream(urls, buffer):
    return wds.DataPipeline(
        wds.SimpleShardList(urls),
        wds.split_by_worker,
        wds.shuffle(len(urls)),
        wds.tarfile_to_samples(),
        wds.shuffle(buffer),
        wds.map(lambda sample: int(sample["idx.txt"])),
    )


def main():
    torch.manual_seed(0)
    print(f"a full shuffle mixes {full_shuffle_distinct(BATCH)} sources in a batch of {BATCH}")
    with tempfile.TemporaryDirectory(prefix="clinic-38-shards-") as root:
        urls = write_shards(root)
        for name, (buffer, workers) in WAYS.items():
            loader = DataLoader(shard_stream(urls, buffer), batch_size=BATCH, num_workers=workers)
            with contextlib.redirect_stdout(io.StringIO()):  # the batch-by-batch lines: broken.py shows them
                figures = report([batch.tolist() for batch in loader])
            for figure in ("samples", "distinct_sources_per_batch", "one_source_batches", "most_held_in_a_buffer"):
                print(f"metric {name}_{figure}={figures[figure]}")
            print(f"{name}: {figures['distinct_sources_per_batch']} sources a batch, "
                  f"{figures['one_source_batches']} of {figures['batches']} batches of one source, "
                  f"at least {figures['most_held_in_a_buffer']} samples held in a buffer")


if __name__ == "__main__":
    main()
