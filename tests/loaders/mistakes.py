"""Three ways to point the doctor at the wrong thing."""
import torch
from torch.utils.data import DataLoader, TensorDataset

SETTINGS = {"batch_size": 32, "workers": 2}


def make_dataset():  # returns the dataset, not the loader
    return TensorDataset(torch.randn(64, 4))


def make_loader():
    dataset = make_dataset()
    return DataLoader(dataset, batch_size=SETTINGS["batch_size"], num_workers=SETTINGS["num_workers"])
