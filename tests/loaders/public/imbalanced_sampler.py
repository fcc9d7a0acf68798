"""A class-imbalanced image set drawn through ImbalancedDatasetSampler: the sampler counts the
labels once, gives every sample the weight 1 / (size of its class), and draws indices with
torch.multinomial in the main process; the workers only read the samples they are given.

Source: ufoym/imbalanced-dataset-sampler, torchsampler/imbalanced.py (ImbalancedDatasetSampler),
commit 11ca86fcd5ce007f73bfd0433e9be29a9c3a5888
https://github.com/ufoym/imbalanced-dataset-sampler/blob/11ca86fcd5ce007f73bfd0433e9be29a9c3a5888/torchsampler/imbalanced.py
Well built: no risk expected (labels in a tensor, weights in a tensor, drawing in the sampler).
"""
import torch
from torch.utils.data import DataLoader, Dataset, Sampler


class SkewedImages(Dataset):
    def __init__(self, sizes=(1_500, 300, 60, 12)):
        generator = torch.Generator().manual_seed(31)
        self.targets = torch.cat([torch.full((n,), c) for c, n in enumerate(sizes)])
        self.images = torch.randn(len(self.targets), 1, 28, 28, generator=generator)

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, index):
        return self.images[index], self.targets[index]


class ImbalancedDatasetSampler(Sampler):
    def __init__(self, dataset, indices=None, num_samples=None, callback_get_label=None):
        self.indices = list(range(len(dataset))) if indices is None else indices
        self.num_samples = len(self.indices) if num_samples is None else num_samples
        labels = callback_get_label(dataset) if callback_get_label else dataset.targets
        labels = torch.as_tensor(labels)[self.indices]
        counts = torch.bincount(labels)
        self.weights = (1.0 / counts[labels]).double()

    def __iter__(self):
        return (self.indices[i] for i in torch.multinomial(self.weights, self.num_samples, replacement=True))

    def __len__(self):
        return self.num_samples


def make_loader():
    dataset = SkewedImages()
    return DataLoader(dataset, sampler=ImbalancedDatasetSampler(dataset), batch_size=64, num_workers=2)
