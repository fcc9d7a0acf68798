"""The data both scripts read: captions.txt, one line per image, `label<TAB>caption`."""
from pathlib import Path

CAPTIONS = Path(__file__).with_name("captions.txt")


def line_offsets(path=CAPTIONS) -> list[int]:
    """Where each line starts, in bytes: the index a dataset seeks by."""
    offsets, at = [], 0
    with open(path, "rb") as lines:
        for line in lines:
            offsets.append(at)
            at += len(line)
    return offsets
