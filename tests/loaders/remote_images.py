"""Images fetched over HTTP from an object store, one request per sample, no workers."""
import io
import urllib.request

import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from scenarios.object_store import LatencyObjectStore
from scenarios.synthetic_data import jpeg_images


class RemoteImages(Dataset):
    def __init__(self, url, count):
        self.url, self.count = url, count

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        with urllib.request.urlopen(f"{self.url}/{index % 32}.jpg") as response:
            image = Image.open(io.BytesIO(response.read())).convert("RGB")
        return torch.frombuffer(bytearray(image.tobytes()), dtype=torch.uint8).float().mean()


def make_loader():
    store = LatencyObjectStore(jpeg_images(32, size=48), latency_s=0.02).__enter__()  # stays up
    return DataLoader(RemoteImages(store.url, 256), batch_size=4)
