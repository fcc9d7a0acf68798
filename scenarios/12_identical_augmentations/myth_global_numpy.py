"""Scenario 12, myth check: "numpy's global random state repeats in every worker".

    python scenarios/12_identical_augmentations/myth_global_numpy.py

The well-known warning (pytorch/pytorch#5059) was true until PyTorch 1.9; since
then each worker seeds np.random from the DataLoader's base seed and its own id
(torch/utils/data/_utils/worker.py, _generate_state).  This is broken.py's
pipeline drawing from np.random instead of a generator of its own, after an
np.random.seed(0) in the main process, as training scripts do.
Expect: on torch 2.13, no duplicated draw and no replayed epoch.
"""
import numpy as np

from broken import CROP, SIDE, RandomCropFlip, main


class GlobalNumpyCropFlip(RandomCropFlip):
    def draw(self):
        # MYTH: "np.random gives every worker the same numbers": each worker's state is seeded apart.
        top, left = np.random.randint(0, SIDE - CROP + 1, size=2)
        return int(top), int(left), int(np.random.rand() < 0.5), float(np.random.uniform(0.8, 1.2))


if __name__ == "__main__":
    np.random.seed(0)
    main(dataset_class=GlobalNumpyCropFlip)
