"""A horizontal flip decided by a coin drawn from torch's global generator, as torchvision's
RandomHorizontalFlip does (torch.rand(1) < p): PyTorch seeds that generator per worker and
per epoch, so the workers' coins are independent.

Source: pytorch/vision, torchvision/transforms/transforms.py (RandomHorizontalFlip.forward)
https://github.com/pytorch/vision/blob/main/torchvision/transforms/transforms.py
Well built: no risk expected (scenario 12's measured check must not trip on a fair coin).
"""
import torch
from torch.utils.data import DataLoader, Dataset


class FlippedRamps(Dataset):
    def __init__(self, count: int = 256):
        self.images = torch.arange(count * 8, dtype=torch.float32).reshape(count, 1, 8)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        image = self.images[index]
        if torch.rand(1).item() < 0.5:
            image = image.flip(-1)
        return image


def make_loader():
    return DataLoader(FlippedRamps(), batch_size=16, shuffle=True, num_workers=2)
