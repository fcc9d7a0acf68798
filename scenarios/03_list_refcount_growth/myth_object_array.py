"""Scenario 03, myth check: does np.array(records, dtype=object) help?

    python scenarios/03_list_refcount_growth/myth_object_array.py

An object array is a numpy array of pointers to the very same Python dicts:
reading an element still writes to the dict's reference count.
"""
import numpy as np

from broken import DetectionDataset, main
from scenarios.synthetic_data import detection_annotations


class ObjectArrayDetectionDataset(DetectionDataset):
    def __init__(self, count):
        self.records = np.array(detection_annotations(count), dtype=object)


if __name__ == "__main__":
    main(ObjectArrayDetectionDataset)
