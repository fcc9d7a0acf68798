"""Scenario 23, myth check: "give each worker a tokenizer of its own".

    python scenarios/23_tokenizers_before_fork/myth_tokenizer_per_worker.py   # still one thread; exits 1

broken.py's run, with one change: the collate function no longer uses the main process's
tokenizer; each worker builds its own on first use (fixes/per_worker.py's PerWorker, the
recipe of scenario 01).  The main process still looks at 512 lengths with encode_batch first.
What tokenizers switches off at the fork is not a tokenizer's: it is the process's, one
switch for every tokenizer in it, old or new.  The worker's own tokenizer tokenizes on one
thread as well, and the script fails as broken.py does.  (With no use of the pool before
the fork, the inherited tokenizer keeps its threads anyway: fixed.py.)
"""

from torch.utils.data import DataLoader

from _corpus import build_tokenizer, make_texts
from broken import Tokenize
from fixes.per_worker import PerWorker


class OwnTokenizer:
    """A tokenizer that each process builds for itself, the first time it encodes."""

    def __init__(self):
        self.per_process = PerWorker(build_tokenizer)  # MYTH: a new tokenizer gets new threads

    def encode_batch(self, texts):
        return self.per_process.get().encode_batch(texts)


def main():
    texts, tokenizer = make_texts(), build_tokenizer()
    tokenizer.encode_batch(texts[:512])  # broken.py's look at the lengths
    loader = DataLoader(texts, batch_size=256, num_workers=1, collate_fn=Tokenize(OwnTokenizer()),
                        multiprocessing_context="fork")
    threads = max(started for _, started in loader)
    print(f"metric worker_tokenizer_threads={threads}")
    if threads == 0:
        raise SystemExit("the worker's own tokenizer tokenized on one thread too: parallelism is off "
                         "for the whole worker process, every tokenizer in it")
    print(f"the worker's own tokenizer started {threads} threads")


if __name__ == "__main__":
    main()
