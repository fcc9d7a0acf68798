"""Scenario 03, myth check: does np.array(records, dtype=object) help?

    python scenarios/03_list_refcount_growth/myth_object_array.py

"A deep dive into PyTorch DataLoader with Multiprocessing" suggests a numpy
array (or a pandas frame) instead of a Python list.  Records that are dicts
can only go into one as dtype=object: an array of pointers to the very same
Python dicts, so reading an element still writes to the dict's reference
count.  Expect the same growth, and the same failed budget, as broken.py.
"""
import numpy as np

from broken import DetectionDataset, main
from scenarios.synthetic_data import detection_annotations


class ObjectArrayDetectionDataset(DetectionDataset):
    def __init__(self, count):
        # MYTH: a numpy array instead of a list stops the copying.
        self.records = np.array(detection_annotations(count), dtype=object)


if __name__ == "__main__":
    main(ObjectArrayDetectionDataset)
