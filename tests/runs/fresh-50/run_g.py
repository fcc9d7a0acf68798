"""Bible-verse language-ID classifier fine-tuned with the Hugging Face Trainer.

A word-piece tokenizer is trained on the corpus in the script, the length of the tokenised
verses is checked before training (to pick max_length), and the collator tokenises each
batch inside the Trainer's DataLoader workers (dataloader_num_workers=2).
"""
import random
import shutil
import tempfile

import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
from torch.utils.data import Dataset
from transformers import (BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast,
                          Trainer, TrainingArguments)

LANGS = {
    0: "en kai the and of to in that he shall unto for his i lord".split(),
    1: "de und die der zu den sie er das nicht mit sich des herr".split(),
    2: "nl en de het van dat hij die in zijn niet met den heere".split(),
    3: "sv och i att han som de det en till med honom herren er".split(),
}


def make_verses(n, seed=0):
    rng = random.Random(seed)
    verses = []
    for i in range(n):
        lang = i % len(LANGS)
        words = [rng.choice(LANGS[lang][1:]) for _ in range(rng.randint(8, 40))]
        verses.append((" ".join(words).capitalize() + ".", lang))
    return verses


class Verses(Dataset):
    def __init__(self, verses):
        self.verses = verses

    def __len__(self):
        return len(self.verses)

    def __getitem__(self, i):
        text, lang = self.verses[i]
        return {"text": text, "label": lang}


class TokenizeCollator:
    def __init__(self, tokenizer, max_length):
        self.tokenizer, self.max_length = tokenizer, max_length

    def __call__(self, rows):
        enc = self.tokenizer([r["text"] for r in rows], padding=True, truncation=True,
                             max_length=self.max_length, return_tensors="pt")
        enc["labels"] = torch.tensor([r["label"] for r in rows])
        return enc


def main():
    out = tempfile.mkdtemp(prefix="langid_")
    try:
        verses = make_verses(480)
        wp = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        wp.normalizer = normalizers.BertNormalizer(lowercase=True)
        wp.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        wp.train_from_iterator((t for t, _ in verses), trainers.WordPieceTrainer(
            vocab_size=300, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]"]))
        tokenizer = PreTrainedTokenizerFast(tokenizer_object=wp, pad_token="[PAD]", unk_token="[UNK]",
                                            cls_token="[CLS]", sep_token="[SEP]")

        lengths = [len(ids) for ids in tokenizer([t for t, _ in verses])["input_ids"]]
        max_length = min(128, max(lengths))
        print(f"vocab {tokenizer.vocab_size}, longest verse {max(lengths)} tokens", flush=True)

        config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=64, num_hidden_layers=2,
                            num_attention_heads=2, intermediate_size=128, num_labels=len(LANGS),
                            pad_token_id=tokenizer.pad_token_id)
        args = TrainingArguments(output_dir=out, per_device_train_batch_size=16, max_steps=30,
                                 learning_rate=2e-3, logging_steps=10, save_strategy="no",
                                 report_to="none", use_cpu=True, dataloader_num_workers=2,
                                 remove_unused_columns=False, disable_tqdm=True)
        trainer = Trainer(model=BertForSequenceClassification(config), args=args,
                          train_dataset=Verses(verses),
                          data_collator=TokenizeCollator(tokenizer, max_length))
        result = trainer.train()
        print(f"train loss {result.training_loss:.3f}", flush=True)
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
