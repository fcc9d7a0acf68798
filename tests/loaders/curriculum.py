"""Curriculum learning: the training loop raises the difficulty each epoch with
dataset.set_epoch(epoch); persistent workers save the start-up cost of each epoch."""
import torch
from torch.utils.data import DataLoader, Dataset


class CurriculumDataset(Dataset):
    def __init__(self, samples):
        self.samples = samples
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        noise = min(1.0, 0.1 * self.epoch)  # harder examples in later epochs
        return self.samples[index] + noise * torch.randn(8)


def make_loader():
    return DataLoader(CurriculumDataset(torch.randn(1024, 8)), batch_size=64, shuffle=True,
                      num_workers=2, persistent_workers=True)
