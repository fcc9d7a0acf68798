"""Lines of text tokenized one at a time in __getitem__ by a tokenizers.Tokenizer loaded from its
JSON file in __init__, in the shape of transformers' LineByLineTextDataset (which tokenizes
in __init__ instead); the training process never runs the tokenizer's thread pool before the
workers fork.

Source: huggingface/transformers, src/transformers/data/datasets/language_modeling.py
(LineByLineTextDataset), commit 3ce159c740593e00450cd69241e7cac615cbdc9b
https://github.com/huggingface/transformers/blob/3ce159c740593e00450cd69241e7cac615cbdc9b/src/transformers/data/datasets/language_modeling.py
Well built: no risk expected (scenario 23 is a note: the doctor cannot see earlier use).
"""
import atexit
import shutil
import tempfile
from pathlib import Path

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset

WORDS = ["the", "loader", "reads", "a", "line", "of", "text", "and", "every", "worker", "tokenizes", "it"]


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_corpus(root: Path, lines: int = 512) -> tuple:
    vocab = {"[UNK]": 0, "[PAD]": 1, **{w: i + 2 for i, w in enumerate(WORDS)}}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(root / "tokenizer.json"))
    text = "\n".join(" ".join(WORDS[(i + k) % len(WORDS)] for k in range(3 + i % 9)) for i in range(lines))
    (root / "train.txt").write_text(text)
    return root / "tokenizer.json", root / "train.txt"


class LineByLine(Dataset):
    def __init__(self, tokenizer_file: Path, text_file: Path):
        self.tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self.lines = [line for line in text_file.read_text().splitlines() if line.strip()]

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, index):
        return torch.tensor(self.tokenizer.encode(self.lines[index]).ids)


def pad_batch(samples):
    return pad_sequence(samples, batch_first=True, padding_value=1)


def make_loader():
    return DataLoader(LineByLine(*write_corpus(scratch())), batch_size=32, shuffle=True, num_workers=2,
                      collate_fn=pad_batch)
