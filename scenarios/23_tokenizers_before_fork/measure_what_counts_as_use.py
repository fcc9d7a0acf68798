"""Scenario 23, measurement: which calls in the main process cost a forked child its parallelism.

    python scenarios/23_tokenizers_before_fork/measure_what_counts_as_use.py

For each call below, a fresh process (forked from this one, which never tokenizes) makes the
call once, then forks a child that runs encode_batch on 256 sentences and reports how many
threads that started: none means tokenizers had switched its parallelism off at the fork,
so the call counted as a use of the pool.  The cases:
  nothing            the tokenizer built, never used
  encode             Tokenizer.encode() of one sentence
  encode_padded      the same with padding enabled (the padding step has a parallel path)
  encode_batch_1     encode_batch() of a one-sentence list (what transformers 4.x fast
                     tokenizers call for a single text)
  encode_batch_512   broken.py's look at the lengths
  decode_batch       decode_batch() of one id list
  train              train_from_iterator() of a BPE trainer on 200 sentences
"""
import multiprocessing
import os

from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from _corpus import build_tokenizer, make_texts, threads_here

CASES = ("nothing", "encode", "encode_padded", "encode_batch_1", "encode_batch_512", "decode_batch", "train")


def use(case, tokenizer, texts):
    if case == "encode":
        tokenizer.encode(texts[0])
    elif case == "encode_padded":
        tokenizer.enable_padding()
        tokenizer.encode(texts[0])
    elif case.startswith("encode_batch_"):
        tokenizer.encode_batch(texts[: int(case.rsplit("_", 1)[1])])
    elif case == "decode_batch":
        tokenizer.decode_batch([[5, 6, 7]])
    elif case == "train":
        bpe = Tokenizer(models.BPE(unk_token="[UNK]"))
        bpe.pre_tokenizer = pre_tokenizers.Whitespace()
        bpe.train_from_iterator(texts[:200], trainers.BpeTrainer(vocab_size=300, show_progress=False))


def child_threads(tokenizer, texts, answer):
    before = threads_here()
    tokenizer.encode_batch(texts[:256])
    answer.send(threads_here() - before)


def after(case, answer):
    texts, tokenizer = make_texts(512), build_tokenizer()
    use(case, tokenizer, texts)
    fork = multiprocessing.get_context("fork")
    receive, send = fork.Pipe(duplex=False)
    child = fork.Process(target=child_threads, args=(tokenizer, texts, send))
    child.start()
    answer.send(receive.recv() if receive.poll(20) else None)
    child.kill()
    child.join()


def main():
    fork = multiprocessing.get_context("fork")
    os.environ.pop("TOKENIZERS_PARALLELISM", None)
    for case in CASES:
        receive, send = fork.Pipe(duplex=False)
        process = fork.Process(target=after, args=(case, send))
        process.start()
        started = receive.recv() if receive.poll(30) else None
        process.kill()
        process.join()
        if started is None:
            raise SystemExit(f"{case}: the child gave no answer within 20 s")
        verdict = "parallelism kept" if started else "parallelism switched off: the call used the pool"
        print(f"{case:17s} then fork: the child's encode_batch started {started} threads ({verdict})")
        print(f"metric {case}_counts_as_use={0 if started else 1}")


if __name__ == "__main__":
    main()
