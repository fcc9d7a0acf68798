"""Not for running: the annotation file that scenario 19's scripts read (a COCO-style
index, one JSON record a line), written to a temporary folder and removed after."""
import contextlib
import json
import os
import tempfile

from scenarios.synthetic_data import detection_annotations


@contextlib.contextmanager
def annotation_file(count: int):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "instances_train.jsonl")
        with open(path, "w") as out:
            out.writelines(json.dumps(record) + "\n" for record in detection_annotations(count))
        yield path
