# Source: nanguoyu/Foldable-Sparse-and-Low-Rank-Pretraining, para_eff_pt/peft_pretraining/dataloader.py (class
#   PreprocessedIterableDataset_noslice: __iter__ calls get_worker_info() and reads worker_id and num_workers, but in the
#   worker branch sets iter_data = self.data, where its sibling PreprocessedIterableDataset in the same file uses
#   itertools.islice(self.data, worker_id, None, num_workers); examples tokenized to max_length with padding and
#   stacked into batches of batch_size inside the dataset), used GaLore-style as
#   DataLoader(dataset, batch_size=None, num_workers=args.workers)
#   (https://github.com/nanguoyu/Foldable-Sparse-and-Low-Rank-Pretraining/blob/0193aa32ae12234bf22d16789fd4f8f4fe4698a0/para_eff_pt/peft_pretraining/dataloader.py).
# Kept: the _noslice __iter__ as written (worker info read, nothing split), tokenization and batching inside the
#   dataset, _format_batch stacking input_ids and attention_mask, batch_size=None on the DataLoader.
# Changed: the C4 stream is a JSON-lines file of 600 synthetic documents read by a small iterable (no Hugging Face
#   streaming dataset, which would shard by worker on its own); the T5 tokenizer is a whitespace-vocabulary callable
#   with the same call signature (max_length, truncation, padding="max_length", return_tensors="pt"); max_length 64,
#   batch_size 16, 2 workers.
# EXPECTED: 13 (an IterableDataset that never splits its stream by worker: each of the 2 workers yields every batch)
import atexit
import json
import os
import shutil
import tempfile

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

WORDS = [f"w{i}" for i in range(500)]


def _write_corpus(count=600):
    root = tempfile.mkdtemp(prefix="fc-c4-")
    atexit.register(shutil.rmtree, root, True)
    path = os.path.join(root, "c4-train.00000-of-01024.json")
    rng = np.random.default_rng(1024)
    with open(path, "w") as f:
        for i in range(count):
            text = " ".join(WORDS[j] for j in rng.integers(0, len(WORDS), int(rng.integers(10, 120))))
            f.write(json.dumps({"text": text, "url": f"https://example.org/{i}"}) + "\n")
    return path


class JsonLinesStream:
    """What the training script iterates: one record per line, read in order."""

    def __init__(self, path):
        self.path = path

    def __iter__(self):
        with open(self.path) as f:
            for line in f:
                yield json.loads(line)


class WhitespaceTokenizer:
    def __init__(self, words, pad_token_id=0):
        self.vocab = {w: i + 2 for i, w in enumerate(words)}
        self.pad_token_id = pad_token_id

    def __call__(self, text, max_length, truncation=True, padding="max_length", return_tensors="pt"):
        ids = [self.vocab.get(w, 1) for w in text.split()]
        if truncation:
            ids = ids[:max_length]
        mask = [1] * len(ids)
        if padding == "max_length":
            ids += [self.pad_token_id] * (max_length - len(ids))
            mask += [0] * (max_length - len(mask))
        return {"input_ids": torch.tensor([ids]), "attention_mask": torch.tensor([mask])}


class PreprocessedIterableDataset_noslice(IterableDataset):
    def __init__(self, data, tokenizer, batch_size, max_length):
        super().__init__()
        self.data = data
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.max_length = max_length

    def __iter__(self):
        worker_info = get_worker_info()
        if worker_info is None:
            # If no worker_info is provided, we are not using DataLoader workers, so yield all data
            iter_data = iter(self.data)
        else:
            # If using DataLoader workers, yield a subset of the data for this worker
            worker_id = worker_info.id
            num_workers = worker_info.num_workers
            iter_data = self.data

        batch = []
        for example in iter_data:
            tokenized_example = self.tokenizer(
                example["text"],
                max_length=self.max_length,
                truncation=True,
                padding="max_length",
                return_tensors="pt",
            )
            batch.append(tokenized_example)

            if len(batch) == self.batch_size:
                yield self._format_batch(batch)
                batch = []

        if batch:
            yield self._format_batch(batch)

    def _format_batch(self, batch):
        input_ids = torch.stack([item["input_ids"].squeeze(0) for item in batch])
        attention_mask = torch.stack([item["attention_mask"].squeeze(0) for item in batch])
        return {"input_ids": input_ids, "attention_mask": attention_mask}


def make_loader():
    data = JsonLinesStream(_write_corpus())
    dataset = PreprocessedIterableDataset_noslice(data, WhitespaceTokenizer(WORDS), batch_size=16, max_length=64)
    return DataLoader(dataset, batch_size=None, num_workers=2)
