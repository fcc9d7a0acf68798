"""Robot episodes read by a DataLoader with workers while a visualisation client records them:
the client (rerun's recording stream, started by rr.init in lerobot's visualize_dataset.py)
batches log entries in a background thread, and its blocking flush waits until that thread has
sent everything.  The workers are forked after the client started; each inherits the client with
its queue of pending entries but not its thread, so the first blocking flush in a worker waits
forever.  In lerobot the flush came from the garbage collector finalising a recording inside the
worker (the script now calls gc.collect() right after rr.init, with the comment "to avoid
hanging in a blocking flush when iterating on a dataloader with `num_workers` > 0"); in this
rebuild the dataset records and flushes each frame it loads, so the wait happens on every run.

Source: huggingface/lerobot pull request https://github.com/huggingface/lerobot/pull/165 ("Fix
hanging in visualize_dataset.py when num_workers > 0", root-caused by rerun.io), and
lerobot/scripts/visualize_dataset.py, commit 1b3abbfa61efab9c8895420882ce106d0f28052d
https://github.com/huggingface/lerobot/blob/1b3abbfa61efab9c8895420882ce106d0f28052d/lerobot/scripts/visualize_dataset.py
Faulty: scenario 01 (a client's background thread and its waiting state copied into forked
workers: each worker hangs at its first flush, on every run).
"""
import queue
import threading

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

FRAMES = 240


class RecordingStream:
    """A logging client: log() queues an entry, a batcher thread sends them, flush() waits for it."""

    def __init__(self, application_id: str):
        self.application_id = application_id
        self.pending = queue.Queue()
        self.sent = 0
        threading.Thread(target=self._batcher, daemon=True, name="RerunBatcher").start()

    def _batcher(self):
        while True:
            self.pending.get()
            self.sent += 1  # stands in for encoding and sending to the viewer
            self.pending.task_done()

    def log(self, path: str, value) -> None:
        self.pending.put((path, value))

    def flush(self, blocking: bool = True) -> None:
        if blocking:
            self.pending.join()


class EpisodeFrames(Dataset):
    def __init__(self, recording: RecordingStream):
        rng = np.random.default_rng(5)
        self.state = rng.standard_normal((FRAMES, 6)).astype(np.float32)
        self.action = rng.standard_normal((FRAMES, 6)).astype(np.float32)
        self.recording = recording

    def __len__(self):
        return FRAMES

    def __getitem__(self, index):
        self.recording.log("observation.state", self.state[index])
        self.recording.flush(blocking=True)
        return {"index": index, "frame_index": index % 60, "observation.state": torch.from_numpy(self.state[index]),
                "action": torch.from_numpy(self.action[index])}


def make_loader():
    recording = RecordingStream("lerobot/pusht/episode_0")   # rr.init(...)
    recording.log("meta", "episode 0")
    recording.flush()
    return DataLoader(EpisodeFrames(recording), batch_size=32, num_workers=2)
