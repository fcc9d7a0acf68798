"""Scenario 22, myth check: "shuffle the stream and every worker gets data".

    python scenarios/22_fewer_shards_than_workers/myth_shuffle_spreads_shards.py

IterableDataset.shuffle() shuffles the order of the shards and mixes samples in a buffer,
but the buffer is filled inside each worker, from the shards that worker was given: it does
not create shards.  This is broken.py with stream.shuffle(seed=0, buffer_size=64) before the
map: the same 3 shards over 4 workers, the same idle worker and the same log line.
"""
from broken import main

if __name__ == "__main__":
    main(shuffle=True)  # MYTH: shuffling the stream spreads the samples over all 4 workers.
