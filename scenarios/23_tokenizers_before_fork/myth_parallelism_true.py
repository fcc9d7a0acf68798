"""Scenario 23, myth check: "set TOKENIZERS_PARALLELISM=true to silence the warning".

    python scenarios/23_tokenizers_before_fork/myth_parallelism_true.py   # hangs at the first batch

The line many training scripts carry at their top, then broken.py's run: the main process
encodes 512 sentences with encode_batch, and the DataLoader forks its worker.  With the
variable set, tokenizers' fork handler leaves parallelism on in the worker (nothing printed,
with any release), and the worker's first encode_batch hands its work to the thread pool it
inherited from the main process, whose threads fork did not copy: nobody ever picks the work
up.  No batch, no error, no CPU use; run alone, a watchdog in the worker prints where it
waits after 30 s and ends it.
"""
import faulthandler
import os

os.environ["TOKENIZERS_PARALLELISM"] = "true"  # MYTH: silences the warning, keeps the threads

from torch.utils.data import DataLoader  # the variable first, as the advice goes

from _corpus import build_tokenizer, make_texts
from broken import Tokenize


def arm_watchdog(worker_id):
    faulthandler.dump_traceback_later(30, exit=True)  # the demo must not outlive itself


def main():
    texts, tokenizer = make_texts(), build_tokenizer()
    tokenizer.encode_batch(texts[:512])  # broken.py's look at the lengths
    loader = DataLoader(texts, batch_size=256, num_workers=1, collate_fn=Tokenize(tokenizer),
                        multiprocessing_context="fork", worker_init_fn=arm_watchdog)
    print("main process used the pool; TOKENIZERS_PARALLELISM=true; waiting for the first batch", flush=True)
    batches = sum(1 for _ in loader)
    print(f"metric batches={batches}")
    print(f"no hang: {batches} batches")


if __name__ == "__main__":
    main()
