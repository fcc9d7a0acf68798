"""The workers send only the index; the training process makes each sample itself, so nothing a
worker sends is kept. The descriptors go away because the workers do no work. A shortcut.
"""
import resource

import torch
from torch.utils.data import DataLoader, Dataset

from scenarios.instruments import open_fd_count

SAMPLES = 5_000
# A quarter of the usual default of 1024: the same failure, four times sooner.
FD_SOFT_LIMIT = 256


class ReviewsDataset(Dataset):
    """Feature vectors with one of five ratings, as a tokenized review set would give."""

    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        return index


def main():
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(FD_SOFT_LIMIT, hard), hard))
    torch.manual_seed(0)
    model = torch.nn.Linear(32, 5)
    loader = DataLoader(ReviewsDataset(), batch_size=16, num_workers=2,
                        multiprocessing_context="fork")
    predictions, targets = [], []
    peak_fds = open_fd_count()
    try:
        with torch.no_grad():
            for step, indices in enumerate(loader):
                features = torch.stack([torch.randn(32, generator=torch.Generator().manual_seed(i))
                                        for i in indices.tolist()])
                labels = indices % 5
                predictions.append(model(features).argmax(dim=1))
                # BUG: `labels` is shared memory a worker sent, held open by one file
                # descriptor until the tensor is freed; keeping it keeps the descriptor.
                targets.append(labels)
                peak_fds = max(peak_fds, open_fd_count())
                if step % 50 == 0:
                    print(f"batch {step:4d}: {len(targets):4d} kept, {open_fd_count():4d} open fds")
    finally:  # report how far it got, also when the loader gives up
        print(f"metric batches_kept={len(targets)}")
        print(f"metric open_fds_peak={peak_fds}")
    accuracy = (torch.cat(predictions) == torch.cat(targets)).float().mean()
    print(f"accuracy {accuracy:.3f} over {len(torch.cat(targets))} reviews, "
          f"open fds at the end: {open_fd_count()}")


if __name__ == "__main__":
    main()
