"""Scenario 16, measurement: which error a batch of unequal sequences raises, and where.

    python scenarios/16_variable_size_samples/measure_error_messages.py

broken.py's data, shuffled into batches of 32 and collated by the default collate: in
workers started by fork (Linux's default up to Python 3.13), in workers started by
forkserver (the default from Python 3.14), and in the main process.  Every batch fails;
this catches each failure and sorts it by its last line.  In the main process every batch
fails in torch.stack: "stack expects each tensor to be equal size".  In a worker,
default_collate first allocates the batch in shared memory, sized from the total number
of elements, and shapes it like entry 0 times the batch size; when entry 0 is longer
than the batch's average, that resize fails before torch.stack runs, with "Trying to
resize storage that is not resizable".  The script predicts which batch gets which
message from the lengths alone, and counts where the prediction misses.  Last, the same
sequences kept as a Python list of 512 tensors: forkserver cannot even start a worker.
"""
import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler

from broken import BATCH_SIZE, TokenSequences
from _token_corpus import make_corpus

STACK, RESIZE = "stack expects each tensor to be equal size", "Trying to resize storage that is not resizable"


class ListOfTensors(Dataset):
    """The same corpus the way much user code holds it: one tensor per sequence."""

    def __init__(self, sequences, labels):
        self.sequences, self.labels = sequences, labels

    def __len__(self):
        return len(self.sequences)

    def __getitem__(self, index):
        return self.sequences[index], self.labels[index], index


def messages(dataset, batches, **workers):
    """The last line of each batch's error (the loader goes on after a worker's error)."""
    found, wrapped, first_resize, iterator = [], 0, None, iter(DataLoader(dataset, batch_sampler=batches, **workers))
    for _ in batches:
        try:
            next(iterator)
            found.append("no error")
        except RuntimeError as error:
            text = str(error)
            found.append(RESIZE if RESIZE in text else STACK if STACK in text else text.splitlines()[-1])
            wrapped += text.startswith("Caught RuntimeError in DataLoader worker process")
            first_resize = first_resize or (text if RESIZE in text else None)
    return found, wrapped, first_resize


def main():
    sequences, labels = make_corpus()
    dataset = TokenSequences(sequences, labels)
    sampler = RandomSampler(dataset, generator=torch.Generator().manual_seed(0))
    batches = list(BatchSampler(sampler, BATCH_SIZE, drop_last=False))
    lengths = [[dataset.lengths[i] for i in batch] for batch in batches]
    predicted = [RESIZE if len(n) * n[0] > sum(n) else STACK for n in lengths]  # entry 0 longer than average
    in_fork, wrapped, first_resize = messages(dataset, batches, num_workers=2, multiprocessing_context="fork")
    in_forkserver, _, _ = messages(dataset, batches, num_workers=2, multiprocessing_context="forkserver")
    in_main, wrapped_in_main, _ = messages(dataset, batches, num_workers=0)
    print(f"the first batch whose entry 0 is longer than average, as the worker's error reads:\n{first_resize}")
    try:
        next(iter(DataLoader(ListOfTensors(sequences, labels), batch_sampler=batches, num_workers=2,
                             multiprocessing_context="forkserver")))
        list_under_forkserver = "started"
    except ValueError as error:  # multiprocessing/forkserver.py: at most 256 file descriptors per new process
        list_under_forkserver = f"{type(error).__name__}: {error}"
    print(f"a list of {len(sequences)} tensors under forkserver: {list_under_forkserver}")
    print(f"metric batches={len(batches)}")
    print(f"metric worker_stack_errors={in_fork.count(STACK)}")
    print(f"metric worker_resize_errors={in_fork.count(RESIZE)}")
    print(f"metric worker_errors_wrapped={wrapped}")
    print(f"metric forkserver_stack_errors={in_forkserver.count(STACK)}")
    print(f"metric forkserver_resize_errors={in_forkserver.count(RESIZE)}")
    print(f"metric forkserver_same_errors={sum(a == b for a, b in zip(in_fork, in_forkserver))}")
    print(f"metric main_stack_errors={in_main.count(STACK)}")
    print(f"metric main_errors_wrapped={wrapped_in_main}")
    print(f"metric prediction_misses={sum(p != w for p, w in zip(predicted, in_fork))}")
    print(f"{len(batches)} batches: in workers {in_fork.count(STACK)} × '{STACK}', "
          f"{in_fork.count(RESIZE)} × '{RESIZE}'; in the main process {in_main.count(STACK)} × '{STACK}'")


if __name__ == "__main__":
    main()
