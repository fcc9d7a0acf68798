"""Loaders that ask for the GPU where a DataLoader worker runs, written as users write them: the
doctor must catch each request on a machine without a GPU, and never initialise CUDA itself."""
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, default_collate


class GpuAugmented(Dataset):
    """Augments each image on the GPU in __getitem__ (a common way to 'speed up' augmentation)."""

    def __init__(self, count: int = 256):
        self.images = torch.rand(count, 3, 16, 16)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, index):
        image = self.images[index].to("cuda", non_blocking=True)  # asks for the GPU
        return F.avg_pool2d(image, 2).cpu()


def gpu_collate(samples):
    features, = default_collate(samples)
    return features.cuda()  # asks for the GPU


def pick_gpu(worker_id):
    torch.cuda.set_device(0)  # asks for the GPU


class PreloadedOnDevice(Dataset):
    """Holds its table on a device that is not the CPU (a torch.load without map_location of a
    tensor saved from the GPU); `meta` stands in for CUDA on a machine without one."""

    def __init__(self, device: str = "meta"):
        self.table = torch.empty(128, 8, device=device)

    def __len__(self):
        return len(self.table)

    def __getitem__(self, index):
        return index


def make_forked_getitem():
    return DataLoader(GpuAugmented(), batch_size=16, num_workers=2, multiprocessing_context="fork")


def make_spawn_worker_init():
    return DataLoader(GpuAugmented(), batch_size=16, num_workers=2, multiprocessing_context="spawn",
                      worker_init_fn=pick_gpu)


def make_pinned_gpu_collate():
    return DataLoader(torch.utils.data.TensorDataset(torch.rand(256, 8)), batch_size=16, pin_memory=True,
                      collate_fn=gpu_collate)


def make_preloaded_on_device():
    return DataLoader(PreloadedOnDevice(), batch_size=16, num_workers=2, multiprocessing_context="fork")
