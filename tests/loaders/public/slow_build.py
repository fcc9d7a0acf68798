"""A make_loader that waits on its data longer than the doctor's build limit allows (a mount
that does not answer): the doctor's message must come at its limit, not when the wait ends.

Not from a public repository: a fixture for loading.load_loader's limit.
"""
import time

import torch
from torch.utils.data import DataLoader


def make_loader():
    time.sleep(30)  # the listing of a network share that does not answer
    return DataLoader(torch.arange(8), batch_size=2)
