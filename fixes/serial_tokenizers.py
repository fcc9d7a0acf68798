"""serial_tokenizers: tokenize in the main process without starting tokenizers' thread pool.
Fixes scenario 23 (tokenizers used before the DataLoader forks).

Hugging Face `tokenizers` runs `encode_batch`, `decode_batch`, padding of a batch and its
trainers on a Rust thread pool (rayon), started the first time it is needed and kept for
the life of the process.  `fork` copies none of those threads.  So tokenizers registers a
handler that runs in every forked child: if the parent has used the pool, and the
environment variable TOKENIZERS_PARALLELISM was not set, the child's tokenizers turn their
parallelism off for good (releases up to 0.22.1 print "huggingface/tokenizers: The current
process just got forked, after parallelism has already been used. Disabling parallelism to
avoid deadlocks...", later ones say nothing).  Set TOKENIZERS_PARALLELISM=true instead, and
the child's first `encode_batch` waits forever for threads that do not exist.

The pool counts as used only when it really ran, and tokenizers reads the variable each time
it decides.  So the main process can tokenize with the variable off for a while, and a
DataLoader forked afterwards still gets workers whose tokenizers start pools of their own:

    with serial_tokenizers():
        lengths = [len(e.ids) for e in tokenizer.encode_batch(texts[:512])]
    loader = DataLoader(texts, num_workers=2, collate_fn=tokenize_batch)   # workers keep their threads

Wrap every tokenization the main process does before each fork (workers are forked anew each
epoch unless `persistent_workers=True`).  It cannot undo a use that already happened: a
process whose pool has run stays marked.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

VARIABLE = "TOKENIZERS_PARALLELISM"


@contextlib.contextmanager
def serial_tokenizers() -> Iterator[None]:
    """Inside the block, tokenizers work on the calling thread alone; the variable is restored after."""
    before = os.environ.get(VARIABLE)
    os.environ[VARIABLE] = "false"
    try:
        yield
    finally:
        if before is None:
            del os.environ[VARIABLE]
        else:
            os.environ[VARIABLE] = before
