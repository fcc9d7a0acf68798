# Source: Zhiyang-Z/CS554_NLP_Team7, dataloaders/fineweb.py at commit 093a29c085b814b104d54df29893884df4152485
#   (https://github.com/Zhiyang-Z/CS554_NLP_Team7/blob/093a29c085b814b104d54df29893884df4152485/dataloaders/fineweb.py:
#   class PretrainDataset(IterableDataset) holding a text stream and a Hugging Face tokenizer; __iter__ reads
#   get_worker_info(), keeps only documents with cur_idx % num_workers == worker_id, tokenizes them one at a time in
#   the worker into a deque buffer and yields fixed windows of pretrain_len token ids).
# Kept: the per-worker stride split with get_worker_info(), the fast (Rust) tokenizer object stored on the dataset and
#   called only inside the workers, one document per call (no batch encode, so no Rust thread pool is started in the
#   parent), the deque buffer and fixed-length windows; default collate of equal-length windows.
# Changed: the fineweb stream is a JSON-lines file of 400 synthetic documents read by a small iterable (a Hugging Face
#   streaming dataset would also shard by worker on its own); the GPT-2 tokenizer is a `tokenizers` WordLevel
#   tokenizer built from a fixed vocabulary (no training, nothing encoded in the main process) behind a callable with
#   the same call signature; `raise StopIteration` inside the generator (a RuntimeError under PEP 479 at the end of
#   the stream) replaced by `return`; pretrain_len 1024 -> 128; batch_size 8, 2 workers.
# EXPECTED: none (the stream is split by worker; the tokenizer is first used in the workers, one encode at a time)
import atexit
import json
import os
import shutil
import tempfile
from collections import deque

import numpy as np
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

WORDS = [f"tok{i}" for i in range(2000)]


def _write_documents(count=400):
    root = tempfile.mkdtemp(prefix="fc-fineweb-")
    atexit.register(shutil.rmtree, root, True)
    path = os.path.join(root, "fineweb-sample-10BT-000.jsonl")
    rng = np.random.default_rng(554)
    with open(path, "w") as f:
        for i in range(count):
            words = [WORDS[j] for j in rng.integers(0, len(WORDS), int(rng.integers(50, 300)))]
            f.write(json.dumps({"id": f"<urn:uuid:{i:08d}>", "text": " ".join(words)}) + "\n")
    return path


class JsonLinesStream:
    def __init__(self, path):
        self.path = path

    def __iter__(self):
        with open(self.path) as f:
            for line in f:
                yield json.loads(line)


class FastTokenizer:
    """A tokenizer-shaped callable around a tokenizers.Tokenizer, like a PreTrainedTokenizerFast."""

    def __init__(self, words):
        vocab = {"[UNK]": 0, "<|endoftext|>": 1}
        vocab.update({w: i + 2 for i, w in enumerate(words)})
        self._tokenizer = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
        self._tokenizer.pre_tokenizer = Whitespace()

    def __call__(self, text, truncation=False, max_length=None):
        return {"input_ids": self._tokenizer.encode(text).ids}


class PretrainDataset(IterableDataset):
    def __init__(self, dataset, tokenizer, pretrain_len=1024):
        self.dataset = dataset
        self.tokenizer = tokenizer
        self.pretrain_len = pretrain_len
        self.buffer = deque()
        self.it = None

    def __iter__(self):
        cur_idx = -1  # current iteration id for split data for workers.
        worker_info = get_worker_info()
        worker_id, num_workers = 0, 1
        if worker_info is not None:
            worker_id, num_workers = worker_info.id, worker_info.num_workers
        while True:
            if len(self.buffer) >= self.pretrain_len:
                input_ids = [self.buffer.popleft() for _ in range(self.pretrain_len)]
                yield np.array(input_ids)
            else:
                self.it = iter(self.dataset) if self.it is None else self.it
                try:
                    while len(self.buffer) < self.pretrain_len:
                        item = next(self.it)
                        cur_idx += 1
                        assert cur_idx >= 0
                        if cur_idx % num_workers != worker_id:
                            continue  # skip data not assigned to this worker
                        tokens = self.tokenizer(item['text'], truncation=False, max_length=None)['input_ids']
                        self.buffer.extend(tokens)
                except StopIteration:
                    assert len(self.buffer) < self.pretrain_len
                    self.it, cur_idx = None, -1
                    self.buffer.clear()
                    return
                assert len(self.buffer) >= self.pretrain_len
                input_ids = [self.buffer.popleft() for _ in range(self.pretrain_len)]
                yield np.array(input_ids)


def make_loader():
    dataset = PretrainDataset(JsonLinesStream(_write_documents()), FastTokenizer(WORDS), pretrain_len=128)
    return DataLoader(dataset, batch_size=8, num_workers=2)
