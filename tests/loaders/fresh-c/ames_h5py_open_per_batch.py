# Source: pavelsuma/ames, src/utils/tensor_dataset.py and src/utils/dataset_loader.py at commit
#   886851da05a0f1d7d3068bc09eb004b2788275ad (https://github.com/pavelsuma/ames/blob/886851da05a0f1d7d3068bc09eb004b2788275ad/src/utils/tensor_dataset.py:
#   TensorFileDataset.__init__ reads only the shape, h5py.File(self.local_file, 'r')['features'].shape, from a File
#   object it does not keep; TestDataset.__getitem__ receives a whole batch of indices, opens
#   h5py.File(self.local_file, 'r'), reads features[idx, :sequence_len] with sorted unique indices, closes the file,
#   and reorders; get_test_loaders: BatchSampler(SequentialSampler(set), batch_size) as the sampler, batch_size=1,
#   collate_fn=basic_collate returning batch[0], num_workers=8). Compare issue #9
#   (https://github.com/pavelsuma/ames/issues/9, 2026), where a version that kept the open file on the dataset failed.
# Kept: no h5py object stored on the dataset; the file opened and closed inside every __getitem__ in the worker; the
#   skip of the first 5 descriptor dimensions (x, y, scale, mask, weight), masks from column 3; the BatchSampler-as-
#   sampler loader with basic_collate.
# Changed: a synthetic 'features' dataset of 512 images x 40 local descriptors x (5 + 64) dims in a temp dir (removed
#   at exit) instead of the gallery descriptors; the nearest-neighbour cache file left out; batch_size 64, 2 workers,
#   pin_memory False (no GPU).
# EXPECTED: none (the HDF5 file is opened inside each worker's __getitem__ and closed again; nothing is open at fork)
import atexit
import os
import shutil
import tempfile

import h5py
import numpy as np
import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, SequentialSampler


def _write_descriptors(num=512, topk=40, dim=64):
    root = tempfile.mkdtemp(prefix="fc-ames-")
    atexit.register(shutil.rmtree, root, True)
    rng = np.random.default_rng(9)
    features = rng.normal(size=(num, topk, 5 + dim)).astype(np.float16)
    features[:, :, 3] = rng.random((num, topk)) > 0.2
    with h5py.File(os.path.join(root, "dinov2_gallery_local.hdf5"), "w") as f:
        f.create_dataset("features", data=features)
    return root


class TensorFileDataset(Dataset):
    def __init__(self, name, desc_dir, local_desc_name, gnd_data=None):
        self.name = name
        self.desc_dir = desc_dir
        self.gnd_data = gnd_data
        self.local_file = os.path.join(desc_dir, local_desc_name)
        self.num_desc, self.topk, self.local_dim = h5py.File(self.local_file, 'r')['features'].shape
        self.skip_dim = 5  # skip the first 5 dimensions of the local descriptor (x, y, scale, mask, weight)
        self.local_dim -= self.skip_dim

    def __len__(self):
        return self.num_desc


class TestDataset(TensorFileDataset):
    def __init__(self, *args, sequence_len, **kwargs):
        super().__init__(*args, **kwargs)
        self.sequence_len = sequence_len

    def __getitem__(self, batch_index):
        idx = np.sort(np.unique(batch_index)).tolist()
        local_storage = h5py.File(self.local_file, 'r')
        all_local = local_storage['features'][idx, :self.sequence_len]
        local_storage.close()

        masks = all_local[:, :, 3]
        all_local = all_local[[idx.index(i) for i in batch_index]]
        all_local = torch.from_numpy(all_local)
        masks = masks[[idx.index(i) for i in batch_index]]
        masks = torch.from_numpy(masks).bool()
        return (all_local[..., self.skip_dim:], masks), batch_index


def basic_collate(batch):
    return batch[0]


def make_loader():
    gallery_set = TestDataset("roxford5k", _write_descriptors(), "dinov2_gallery_local.hdf5", sequence_len=32)
    gallery_sampler = BatchSampler(SequentialSampler(gallery_set), batch_size=64, drop_last=False)
    return DataLoader(gallery_set, sampler=gallery_sampler, batch_size=1, num_workers=2, pin_memory=False,
                      collate_fn=basic_collate)
