"""Continued pre-training of a small causal LM on a streamed corpus with transformers' Trainer.

The corpus is two JSONL exports (`train-00000-of-00002.jsonl`, `train-00001-of-00002.jsonl`),
loaded with `load_dataset(..., streaming=True)` so that it is never held in memory, tokenized on the
fly by `.map()`; the Trainer's DataLoader uses `dataloader_num_workers=4` to keep up.
"""
import json
import os
import random
import shutil
import tempfile
import time

from datasets import load_dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

SEQ = 64
VOCAB = 128


def write_corpus(folder, files=2, docs_per_file=400):
    rng = random.Random(0)
    words = ["the", "model", "data", "stream", "token", "worker", "shard", "batch", "epoch", "loss",
             "gradient", "layer", "attention", "cache", "file", "read", "write", "queue", "fast", "slow"]
    paths = []
    for f in range(files):
        path = os.path.join(folder, f"train-{f:05d}-of-{files:05d}.jsonl")
        with open(path, "w") as out:
            for d in range(docs_per_file):
                text = " ".join(rng.choices(words, k=rng.randint(20, 60)))
                out.write(json.dumps({"id": f"{f}-{d}", "text": text}) + "\n")
        paths.append(path)
    return paths


def tokenize(example):
    ids = [min(ord(c), VOCAB - 1) for c in example["text"]][:SEQ]
    ids += [0] * (SEQ - len(ids))
    return {"input_ids": ids, "attention_mask": [int(i != 0) for i in ids], "labels": ids}


class Throughput(TrainerCallback):
    def on_train_begin(self, args, state, control, **kw):
        self.t0 = time.time()

    def on_log(self, args, state, control, logs=None, **kw):
        if logs and "loss" in logs:
            rate = state.global_step * args.per_device_train_batch_size / (time.time() - self.t0)
            print(f"step {state.global_step}: loss {logs['loss']:.3f}, {rate:.0f} samples/s")


def main():
    work = tempfile.mkdtemp(prefix="cpt-")
    try:
        files = write_corpus(work)
        stream = load_dataset("json", data_files=files, split="train", streaming=True,
                              cache_dir=os.path.join(work, "hf-cache"))
        stream = stream.map(tokenize, remove_columns=["id", "text"])
        stream = stream.shuffle(seed=42, buffer_size=256)
        config = GPT2Config(vocab_size=VOCAB, n_positions=SEQ, n_embd=64, n_layer=2, n_head=2, bos_token_id=1,
                            eos_token_id=2)
        model = GPT2LMHeadModel(config)
        args = TrainingArguments(
            output_dir=os.path.join(work, "out"), max_steps=30, per_device_train_batch_size=16,
            learning_rate=1e-3, logging_steps=10, save_strategy="no", report_to=[], use_cpu=True,
            dataloader_num_workers=4, disable_tqdm=True,
        )
        Trainer(model=model, args=args, train_dataset=stream, callbacks=[Throughput()]).train()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
