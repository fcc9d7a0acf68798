"""Looks at the lengths with a second tokenizer, built for that alone, and gives the loader one
that has never encoded anything. But the thread pool, and the flag that says it was used, belong
to the tokenizers library in the process, not to a tokenizer: the look still runs the pool in
the main process before the fork, and the worker still tokenizes on one thread. The fault moved
to another object, not away: half a fix.
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
        encodings = self.tokenizer.encode_batch(texts)
        ids = pad_sequence([torch.tensor(e.ids) for e in encodings], batch_first=True)
        return ids, threads_here() - before if first else 0


def main(num_workers=1, context="fork"):
    texts, tokenizer = make_texts(), build_tokenizer()
    # BUG: encode_batch in the main process starts tokenizers' thread pool before the fork
    lengths = [len(e.ids) for e in build_tokenizer().encode_batch(texts[:512])]  # not the loader's tokenizer
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
