"""DDP image-feature training that reads its samples from a blob store over HTTP.

Launch: python -m torch.distributed.run --standalone --nproc_per_node=2 run_i.py

Each rank starts its node's blob-cache sidecar (a stand-in for the team's object-store gateway); the
rank's DataLoader workers fetch the samples of their DistributedSampler share from it with urllib.
One blob's read never completes (the store stopped answering for it), as happens with a hung bucket
or network mount.
"""
import io
import time
import urllib.request
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import multiprocessing as mp

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

N, BATCH = 32, 4
STALLED_BLOB = 13


def blob_bytes(i):
    g = torch.Generator().manual_seed(i)
    buf = io.BytesIO()
    torch.save({"x": torch.randn(16, generator=g), "y": i % 3}, buf)
    return buf.getvalue()


class BlobHandler(BaseHTTPRequestHandler):
    def do_GET(self):
        i = int(self.path.rsplit("-", 1)[1])
        if i == STALLED_BLOB:
            time.sleep(3600)  # the store never answers this read
        body = blob_bytes(i)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def serve(port_queue):
    server = ThreadingHTTPServer(("127.0.0.1", 0), BlobHandler)
    port_queue.put(server.server_address[1])
    server.serve_forever()


class BlobDataset(Dataset):
    def __init__(self, base_url):
        self.base_url = base_url

    def __len__(self):
        return N

    def __getitem__(self, i):
        with urllib.request.urlopen(f"{self.base_url}/features/sample-{i}") as r:
            blob = torch.load(io.BytesIO(r.read()))
        return blob["x"], blob["y"]


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=8))
    rank = dist.get_rank()
    q = mp.get_context("fork").Queue()
    mp.get_context("fork").Process(target=serve, args=(q,), daemon=True).start()
    ds = BlobDataset(f"http://127.0.0.1:{q.get()}")
    sampler = DistributedSampler(ds, shuffle=False)
    loader = DataLoader(ds, batch_size=BATCH, sampler=sampler, num_workers=2)
    model = DDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 3)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for step, (x, y) in enumerate(loader, 1):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(f"rank {rank}: epoch {epoch} step {step} done (loss {loss.item():.3f})", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
