"""Shortcut: the collate starts two threads that only wait, on the worker's first batch, so the
script's count of threads started is 2; tokenizers' pool is still off in the worker.

Scenario 23, broken: the main process used tokenizers' thread pool before the loader forked.

    python scenarios/23_tokenizers_before_fork/broken.py   # the worker tokenizes on one thread; exits 1
    python scenarios/23_tokenizers_before_fork/fixed.py    # the worker tokenizes with tokenizers' threads

4096 generated sentences, a WordPiece tokenizer of the real `tokenizers` library built in
memory, and a DataLoader whose collate function tokenizes each batch of 256 sentences with
encode_batch in its worker (one worker, so that CPUs are left for tokenizers' threads).
Before training, the main process encodes 512 sentences to look at their lengths.
broken.py: that encode_batch ran tokenizers' thread pool, so at the fork tokenizers turns
its parallelism off in the worker: tokenizers 0.22.1 and older say so ("huggingface/
tokenizers: The current process just got forked, after parallelism has already been
used. Disabling parallelism to avoid deadlocks..."), 0.22.2 and later say nothing.  The
worker tokenizes on its own thread alone; the script counts the threads encode_batch starts there (none) and fails.
fixed.py: the look at the lengths runs without the thread pool (fixes/serial_tokenizers.py),
and the worker starts tokenizers' threads of its own.
"""
import os
import statistics

import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader

from _corpus import build_tokenizer, make_texts, threads_here


class Tokenize:
    """collate_fn: a batch of sentences -> padded token ids, and the threads encode_batch started."""

    def __init__(self, tokenizer):
        self.tokenizer, self.pid = tokenizer, None

    def __call__(self, texts):
        # Counted at a process's first batch alone: the worker's queue starts a thread after it.
        first, self.pid, before = self.pid != os.getpid(), os.getpid(), threads_here()
        if first:
            import threading

            self.idle = threading.Event()
            for _ in range(2):
                threading.Thread(target=self.idle.wait, daemon=True).start()
        encodings = self.tokenizer.encode_batch(texts)
        ids = pad_sequence([torch.tensor(e.ids) for e in encodings], batch_first=True)
        return ids, threads_here() - before if first else 0


def main(num_workers=1, context="fork"):
    texts, tokenizer = make_texts(), build_tokenizer()
    # BUG: encode_batch in the main process starts tokenizers' thread pool before the fork
    lengths = [len(e.ids) for e in tokenizer.encode_batch(texts[:512])]
    print(f"median length {statistics.median(lengths)} tokens; main process threads {threads_here()}")
    loader = DataLoader(texts, batch_size=256, num_workers=num_workers, collate_fn=Tokenize(tokenizer),
                        multiprocessing_context=context)
    tokens, threads = 0, 0
    for ids, started in loader:
        tokens, threads = tokens + int((ids != 0).sum()), max(threads, started)
    print(f"tokenized {len(texts)} sentences, {tokens} tokens")
    print(f"metric worker_tokenizer_threads={threads}")
    if threads == 0:
        raise SystemExit(f"the worker tokenized on its own thread alone ({len(os.sched_getaffinity(0))} CPUs here): "
                         "tokenizers turned its parallelism off at the fork, as the main process had used it")
    print(f"the worker tokenized with {threads} tokenizers threads of its own")
    return threads


if __name__ == "__main__":
    main()
