"""A LightningDataModule in the shape of Lightning's MNIST demo: prepare_data() writes the
processed tensors once, setup() loads them with torch.load and splits train/val with
random_split and a seeded generator, train_dataloader() returns a shuffled DataLoader with
workers, drop_last and pin_memory (Lightning is not needed to run it: the hooks are called
here in the order the Trainer calls them).

Source: Lightning-AI/pytorch-lightning, src/lightning/pytorch/demos/mnist_datamodule.py
(_MNIST, MNISTDataModule), commit 230b71f15d0df500b113e066174113ebc28316be
https://github.com/Lightning-AI/pytorch-lightning/blob/230b71f15d0df500b113e066174113ebc28316be/src/lightning/pytorch/demos/mnist_datamodule.py
Well built: no risk expected (tensors, a Subset of indices, a seeded split).
"""
import atexit
import shutil
import tempfile
from pathlib import Path

import torch
from torch.utils.data import DataLoader, Dataset, random_split


def scratch() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="clinic-public-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


class MockedMNIST(Dataset):
    """The demo's own MNIST: (images, targets) saved by torch.save, read back whole."""

    def __init__(self, root: Path, train: bool = True, normalize: tuple = (0.1307, 0.3081)):
        self.data, self.targets = torch.load(root / ("training.pt" if train else "test.pt"))
        self.normalize = normalize

    def __len__(self):
        return len(self.data)

    def __getitem__(self, idx):
        image = self.data[idx].float().unsqueeze(0) / 255.0
        image = image.sub(self.normalize[0]).div(self.normalize[1])
        return image, int(self.targets[idx])


class MNISTDataModule:
    def __init__(self, data_dir: Path, val_split: int = 500, num_workers: int = 2, batch_size: int = 32):
        self.data_dir, self.val_split = data_dir, val_split
        self.num_workers, self.batch_size = num_workers, batch_size

    def prepare_data(self, count: int = 3_000):
        generator = torch.Generator().manual_seed(24)
        for name, n in (("training.pt", count), ("test.pt", count // 5)):
            images = torch.randint(0, 256, (n, 28, 28), dtype=torch.uint8, generator=generator)
            torch.save((images, torch.randint(0, 10, (n,), generator=generator)), self.data_dir / name)

    def setup(self, stage: str = "fit"):
        dataset = MockedMNIST(self.data_dir, train=True)
        self.dataset_train, self.dataset_val = random_split(
            dataset, [len(dataset) - self.val_split, self.val_split], generator=torch.Generator().manual_seed(42))

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.dataset_train, batch_size=self.batch_size, shuffle=True,
                          num_workers=self.num_workers, drop_last=True, pin_memory=True)


def make_loader():
    datamodule = MNISTDataModule(scratch())
    datamodule.prepare_data()
    datamodule.setup("fit")
    return datamodule.train_dataloader()
