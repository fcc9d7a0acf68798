"""The text and the tokenizer of scenario 23, imported by its scripts; no download.

make_texts() writes sentences of pseudo-words, the same on every run.  build_tokenizer()
builds a WordPiece tokenizer with the real `tokenizers` library from a vocabulary made
here: every word of the corpus, its prefixes, and its "##" suffixes.  Built from a vocab
dict it never runs tokenizers' thread pool (training with a trainer would), so the only
use of that pool before the loader forks is the one each script makes on purpose.
"""
import os
import random

from tokenizers import Tokenizer
from tokenizers.models import WordPiece
from tokenizers.pre_tokenizers import Whitespace

from scenarios.host import cannot_run

if not os.path.isdir("/proc/self/task"):
    cannot_run("the scripts count a process's threads in /proc/self/task, which only Linux has; "
               "run it on Linux (a VM or container is fine)")

NUM_TEXTS = 4096
WORDS_PER_TEXT = 48
DISTINCT_WORDS = 3000
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _words(seed=23):
    rng = random.Random(seed)
    return [
        "".join(rng.choice(LETTERS) for _ in range(rng.randint(3, 10)))
        for _ in range(DISTINCT_WORDS)
    ]


def make_texts(count=NUM_TEXTS, seed=23):
    words, rng = _words(seed), random.Random(seed + 1)
    return [" ".join(rng.choices(words, k=WORDS_PER_TEXT)) for _ in range(count)]


def build_tokenizer(seed=23):
    vocab = {"[PAD]": 0, "[UNK]": 1}
    for word in _words(seed)[: DISTINCT_WORDS // 2]:  # the other half is split into pieces
        vocab.setdefault(word, len(vocab))
    for word in _words(seed):
        for cut in range(1, len(word)):
            vocab.setdefault(word[:cut], len(vocab))
            vocab.setdefault("##" + word[cut:], len(vocab))
    tokenizer = Tokenizer(WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    return tokenizer


def threads_here():
    """Threads of this process; tokenizers' pool adds one per CPU the first time it runs."""
    return len(os.listdir("/proc/self/task"))
