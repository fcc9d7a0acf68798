"""Scenario 23, measurement: what the parallelism tokenizers switches off at the fork was worth.

    python scenarios/23_tokenizers_before_fork/measure_throughput.py

Sentences tokenized per second by DataLoader workers (broken.py's collate function, 256
sentences a batch, the first batch left out so that worker start-up is not counted), with 1
and with 2 workers, in three configurations of the main process:
  pool_used      broken.py: encode_batch before the fork; the workers' tokenizers run serially
  serial_parent  fixed.py: the same look inside serial_tokenizers(); the workers keep their threads
  variable_false TOKENIZERS_PARALLELISM=false set knowingly, before any use: serial everywhere
Each configuration runs in a process of its own, forked from this one (which never tokenizes),
because a process that has used the pool stays marked.  Two rounds, interleaved; the best
rate of each is kept, so a burst of load from another program lowers one round, not a ratio.
Each rate is divided by pool_used's with the same number of workers.  cpu_wait_share is the
largest share of its timed part that a configuration's processes spent waiting for a CPU: where
it is high, the ratios measure the machine's other load, and the runner leaves them unjudged.
"""
import multiprocessing
import os
import time

from torch.utils.data import DataLoader

from _corpus import build_tokenizer, make_texts
from broken import Tokenize
from fixes.serial_tokenizers import serial_tokenizers
from scenarios.instruments import CpuWait

ROUNDS = 2
BATCH = 256


def look_at_lengths(tokenizer, texts, configuration):
    if configuration == "serial_parent":
        with serial_tokenizers():
            tokenizer.encode_batch(texts[:512])
    else:
        if configuration == "variable_false":
            os.environ["TOKENIZERS_PARALLELISM"] = "false"
        tokenizer.encode_batch(texts[:512])


def training_process(configuration, num_workers, answer):
    texts, tokenizer = make_texts(), build_tokenizer()
    look_at_lengths(tokenizer, texts, configuration)
    loader = DataLoader(texts, batch_size=BATCH, num_workers=num_workers, collate_fn=Tokenize(tokenizer),
                        multiprocessing_context="fork")
    batches = iter(loader)
    _, threads = next(batches)
    threads, started, waits = [threads], time.perf_counter(), CpuWait()
    waits.start()  # the workers are running: they are counted
    for _, started_threads in batches:
        threads.append(started_threads)
    answer.send(((len(texts) - BATCH) / (time.perf_counter() - started), max(threads), waits.share()))


def measure(configuration, num_workers):
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=training_process, args=(configuration, num_workers, send))
    process.start()
    try:
        if not receive.poll(60):
            raise SystemExit(f"{configuration} with {num_workers} worker(s) gave no answer within 60 s")
        return receive.recv()
    finally:
        process.kill()
        process.join()


def main():
    rates, threads, waited = {}, {}, []
    for _ in range(ROUNDS):
        for workers in (1, 2):
            for configuration in ("pool_used", "serial_parent", "variable_false"):
                rate, started, share = measure(configuration, workers)
                key = (configuration, workers)
                rates[key], threads[key] = max(rates.get(key, 0.0), rate), started
                waited.append(share)
    print(f"{len(os.sched_getaffinity(0))} CPUs")
    print(f"metric cpu_wait_share={max(waited):.3f}")
    for (configuration, workers), rate in rates.items():
        ratio = rate / rates[("pool_used", workers)]
        print(f"{configuration:15s} {workers} worker(s)  {rate:8.0f} sentences/s  {ratio:5.2f} x pool_used"
              f"  tokenizers threads per worker: {threads[(configuration, workers)]}")
        print(f"metric {configuration}_{workers}w_threads={threads[(configuration, workers)]}")
        if configuration != "pool_used":
            print(f"metric {configuration}_{workers}w_ratio={ratio:.2f}")


if __name__ == "__main__":
    main()
