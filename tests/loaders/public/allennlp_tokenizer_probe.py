"""Sentences tokenized in the workers by a wrapper built like AllenNLP's
PretrainedTransformerTokenizer: its __init__ loads a fast (Rust) tokenizer and, to learn
which special tokens it adds, encodes the dummy inputs "a" and ("a", "b") at once
(_reverse_engineer_special_tokens; a transformers fast tokenizer sends even one text through
encode_batch).  That runs the tokenizers thread pool in the training process before the
DataLoader forks, so every worker's own encode_batch is quietly single-threaded (older
tokenizers releases printed "The current process just got forked, after parallelism has
already been used", allenai/allennlp#5128).

Source: allenai/allennlp, allennlp/data/tokenizers/pretrained_transformer_tokenizer.py
(__init__ calling _reverse_engineer_special_tokens), commit f27ef38b3074ec89a964d9b2d8de110ed75e7cd1
https://github.com/allenai/allennlp/blob/f27ef38b3074ec89a964d9b2d8de110ed75e7cd1/allennlp/data/tokenizers/pretrained_transformer_tokenizer.py
issue https://github.com/allenai/allennlp/issues/5128
Faulty: scenario 23 (tokenizers used before the fork).
"""
import atexit
import shutil
import tempfile
from pathlib import Path

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, processors
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset

WORDS = ("a b the model reads every sentence and each worker tokenizes its share of the corpus "
         "while training waits for batches of token ids").split()


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def write_tokenizer_and_corpus(root: Path, lines: int = 2_000) -> tuple:
    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, **{w: i + 4 for i, w in enumerate(dict.fromkeys(WORDS))}}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tokenizer.save(str(root / "tokenizer.json"))
    text = "\n".join(" ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(8 + i % 40)) for i in range(lines))
    (root / "train.txt").write_text(text)
    return root / "tokenizer.json", root / "train.txt"


class PretrainedTransformerTokenizer:
    def __init__(self, tokenizer_file: Path):
        self.tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self._reverse_engineer_special_tokens("a", "b")

    def _reverse_engineer_special_tokens(self, token_a: str, token_b: str):
        pair, single = self.tokenizer.encode_batch([(token_a, token_b), token_a])
        a_id = self.tokenizer.token_to_id(token_a)
        seen_a = pair.ids.index(a_id)
        self.sequence_pair_start_tokens = pair.tokens[:seen_a]
        self.single_sequence_start_tokens = single.tokens[:single.ids.index(a_id)]
        self.single_sequence_end_tokens = single.tokens[single.ids.index(a_id) + 1:]

    def tokenize(self, text: str) -> list:
        return self.tokenizer.encode_batch([text])[0].ids


class TextClassificationReader(Dataset):
    def __init__(self, text_file: Path, tokenizer: PretrainedTransformerTokenizer):
        self.lines = text_file.read_text().splitlines()
        self.tokenizer = tokenizer

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, index):
        return torch.tensor(self.tokenizer.tokenize(self.lines[index])), index % 2


def pad_batch(samples):
    ids, labels = zip(*samples)
    return pad_sequence(ids, batch_first=True, padding_value=0), torch.tensor(labels)


def make_loader():
    tokenizer_file, text_file = write_tokenizer_and_corpus(scratch())
    tokenizer = PretrainedTransformerTokenizer(tokenizer_file)  # encodes in this process, before the fork
    return DataLoader(TextClassificationReader(text_file, tokenizer), batch_size=32, shuffle=True, num_workers=2,
                      collate_fn=pad_batch)
