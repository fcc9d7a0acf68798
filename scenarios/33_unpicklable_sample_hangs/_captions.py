"""The data both scripts read: captions.txt, one line per image, `label<TAB>caption`; and the lazy
handle broken.py's samples carry instead of the caption (an open file inside)."""
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


class CaptionHandle:
    """A caption read later, only if the loop logs it: the file it reads from travels with it."""

    def __init__(self, file, offset):
        self.file, self.offset = file, offset

    def read(self):
        self.file.seek(self.offset)
        return self.file.readline().decode().split("\t")[1].strip()
