"""Scenario 13, measured: the fixed stream when the split is uneven, and what drop_last drops.

    python scenarios/13_iterable_dataset_duplicates/measure_uneven_split.py

fixed.py splits 5 shard files over 4 workers: worker 0 reads two files, the others one.
An IterableDataset is batched inside each worker, so every worker ends its share with its
own short batch: without drop_last the epoch has more batches than len(loader); with
drop_last=True each worker drops its own remainder, more than num_workers=0 drops.  With
fewer files (3) than workers, shard_by_worker keeps every 4th record instead.  Each run is
compared with num_workers=0 on the same files.
"""
import tempfile
from collections import Counter

from torch.utils.data import DataLoader, get_worker_info

from _shard_files import write_shards
from fixed import ShardStream


class WorkerTaggedStream(ShardStream):
    """fixed.py's stream, each record tagged with the worker that read it."""

    def __iter__(self):
        info = get_worker_info()
        for record_id, _ in super().__iter__():
            yield record_id, -1 if info is None else info.id


def epoch(files, num_workers, **loader_options):
    loader = DataLoader(WorkerTaggedStream(files), num_workers=num_workers, **loader_options)
    batches = [(ids.tolist(), set(workers.tolist())) for ids, workers in loader]
    return loader, batches, Counter(i for ids, _ in batches for i in ids)


def main():
    with tempfile.TemporaryDirectory() as root:
        files = write_shards(root)
        print(f"{len(files)} shard files, 6 records each, 4 workers, batch_size=4")
        for drop_last in (False, True):
            loader, batches, records = epoch(files, 4, batch_size=4, drop_last=drop_last)
            _, serial, serial_records = epoch(files, 0, batch_size=4, drop_last=drop_last)
            per_worker = Counter(w for ids, workers in batches for w in workers for _ in ids)
            name = "drop_last" if drop_last else "keep_last"
            print(f"drop_last={drop_last}: {len(batches)} batches (len(loader) = {len(loader)}), "
                  f"{sum(records.values())} records kept; num_workers=0: {len(serial)} batches, "
                  f"{sum(serial_records.values())} kept; records per worker {sorted(per_worker.items())}")
            print(f"metric {name}_batches={len(batches)}")
            print(f"metric {name}_loader_len={len(loader)}")
            print(f"metric {name}_dropped={30 - sum(records.values())}")
            print(f"metric {name}_dropped_num_workers_0={30 - sum(serial_records.values())}")
            print(f"metric {name}_mixed_batches={sum(len(workers) > 1 for _, workers in batches)}")
            print(f"metric {name}_worker_share_max={max(per_worker.values())}")
            print(f"metric {name}_worker_share_min={min(per_worker.values())}")
            if not drop_last:
                print(f"metric same_as_num_workers_0={int(records == serial_records)}")
        _, batches, records = epoch(files[:3], 4)
        _, _, serial_records = epoch(files[:3], 0)
        per_worker = Counter(w for _, workers in batches for w in workers)
        print(f"3 files over 4 workers: every 4th record, records per worker {sorted(per_worker.items())}, "
              f"same multiset as num_workers=0: {records == serial_records}")
        print(f"metric few_files_workers_used={len(per_worker)}")
        print(f"metric few_files_same_as_num_workers_0={int(records == serial_records)}")


if __name__ == "__main__":
    main()
