"""Scenario 11, myth check: does forkserver (Linux's default from Python 3.14) end the race?

    python scenarios/11_shared_file_handle/myth_forkserver.py

broken.py with its loader's start method switched to forkserver, as a script
that names none gets on Python 3.14.  No worker is forked from this process, so
none can share its file offset; but each must receive the dataset by pickle,
and the dataset holds an open file.  Expect PyTorch's warning "Got pickle error
when attempting to start a worker Process" and "TypeError: cannot pickle
'_io.BufferedReader' object" as the loop starts: no wrong sample, and no sample
at all.  Then fixed.py under forkserver (warm page cache, to be quick): every
sample matches its checksum, since it opens nothing until a worker reads.
"""
import multiprocessing
import sys
import traceback

from torch.utils.data import DataLoader

import broken
import fixed


def forkserver_loader(*args, **options):
    return DataLoader(*args, **{**options, "multiprocessing_context": "forkserver"})


if __name__ == "__main__":
    # The fork server imports torch before forking workers, as Python 3.14's does (top README).
    multiprocessing.set_forkserver_preload(["torch"])
    # MYTH: a worker that is not forked from this process cannot share its file offset.
    broken.DataLoader = fixed.DataLoader = forkserver_loader
    try:
        broken.main()
        failed = False
    except TypeError:
        traceback.print_exc()
        failed = True
    fixed.main(cold_cache=False)
    if failed:
        sys.exit("no sample under forkserver: broken.py's dataset must pickle, and its open file does not")
