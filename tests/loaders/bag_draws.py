"""Multiple-instance learning: each visit to a bag draws instances not drawn before."""
import torch
from torch.utils.data import DataLoader, Dataset

BAGS, INSTANCES, DRAW = 4, 64, 4


class BagDataset(Dataset):
    def __init__(self):
        self.features = torch.randn(BAGS, INSTANCES, 8)
        self.unused = torch.ones(BAGS, INSTANCES)  # which instances are still to be drawn

    def __len__(self):
        return BAGS * INSTANCES // DRAW

    def __getitem__(self, index):
        bag = index % BAGS
        if self.unused[bag].sum() < DRAW:
            self.unused[bag] = 1
        picked = torch.multinomial(self.unused[bag], DRAW)
        self.unused[bag, picked] = 0
        return bag, self.features[bag, picked]


def make_loader():
    return DataLoader(BagDataset(), batch_size=None, num_workers=2)
