"""Scenario 35, measured: which loaders resume epoch 1 in its own order, with and without the epoch set.

    python scenarios/35_distributed_resume_order/measure_resume_paths.py

Each loader below reads 96 samples in batches of 8 with 2 workers: a whole epoch 0, then 3
batches of epoch 1, where its state_dict() is taken (with torch's global random state, which
accelerator.save_state() saves too).  A fresh interpreter (a child process) then builds the same
loader after the same seeding, gives torch's random state back and loads the loader's state, as
load_state() does, and reads the rest of epoch 1; once as broken.py does, once with the epoch set
first (set_epoch(1)).  Counted: the resumed batches equal to the uninterrupted run's.
- torchdata's StatefulDataLoader(shuffle=True) alone, one process;
- Accelerate's loader (use_stateful_dataloader) for 1 process and for each rank of 2, with its
  SeedableRandomSampler and with its default sampler (prepare_data_loader's num_processes and
  process_index: no process group is needed to build it);
- plain PyTorch: a StatefulDataLoader over a DistributedSampler(shuffle=True), each rank of 2.
"""
import json
import subprocess
import sys
import tempfile
import warnings

import torch
from torch.utils.data import DataLoader, DistributedSampler
from torchdata.stateful_dataloader import StatefulDataLoader

SAMPLES, BATCH, WORKERS, SEED, TAKEN = 96, 8, 2, 0, 3
warnings.filterwarnings("ignore", message="'set_vital' is deprecated")


def build(kind, ranks, rank):
    torch.manual_seed(SEED)  # accelerate's set_seed(0), as far as the loaders go
    data = list(range(SAMPLES))
    if kind == "torchdata":
        return StatefulDataLoader(data, BATCH, shuffle=True, num_workers=WORKERS)
    if kind == "torch_distributed":
        sampler = DistributedSampler(data, num_replicas=ranks, rank=rank, shuffle=True, seed=SEED)
        return StatefulDataLoader(data, BATCH, sampler=sampler, num_workers=WORKERS)
    from accelerate.data_loader import prepare_data_loader
    return prepare_data_loader(DataLoader(data, BATCH, shuffle=True, num_workers=WORKERS), num_processes=ranks,
                               process_index=rank, put_on_device=False, use_stateful_dataloader=True,
                               use_seedable_sampler=kind == "accelerate_seedable")


def set_epoch(loader, epoch):
    (loader.sampler if isinstance(loader.sampler, DistributedSampler) else loader).set_epoch(epoch)


CASES = [("torchdata", 1, 0)] + [(kind, ranks, rank) for kind in ("accelerate_seedable", "accelerate_default")
                                 for ranks in (1, 2) for rank in range(ranks)] + [("torch_distributed", 2, 0),
                                                                                   ("torch_distributed", 2, 1)]


def uninterrupted(kind, ranks, rank):
    loader = build(kind, ranks, rank)
    if kind == "torch_distributed":
        set_epoch(loader, 0)  # the loop sets each epoch as the epoch starts
    for _ in loader:
        pass
    if kind == "torch_distributed":
        set_epoch(loader, 1)
    batches = iter(loader)
    [next(batches) for _ in range(TAKEN)]
    state, rng = loader.state_dict(), torch.get_rng_state()
    return {"rest": [b.tolist() for b in batches], "state": state, "rng": rng}


def resumed(kind, ranks, rank, saved, epoch_set):
    loader = build(kind, ranks, rank)
    torch.set_rng_state(saved["rng"])
    loader.load_state_dict(saved["state"])
    if epoch_set:
        set_epoch(loader, 1)
    got = [b.tolist() for b in loader]
    return sum(a == b for a, b in zip(got, saved["rest"])), len(saved["rest"])


def child(path):
    saved = torch.load(path, weights_only=False)
    results = {}
    for case in CASES:
        name = "{}_{}proc_rank{}".format(*case)
        for epoch_set in (False, True) if case[0] != "torchdata" else (False,):  # its sampler has no epoch
            results[f"{name}{'_epoch_set' if epoch_set else ''}"] = resumed(*case, saved[name], epoch_set)
    print(json.dumps(results))


def main():
    saved = {"{}_{}proc_rank{}".format(*case): uninterrupted(*case) for case in CASES}
    with tempfile.NamedTemporaryFile(suffix=".pt") as file:
        torch.save(saved, file.name)
        # A fresh interpreter resumes, as a restarted job does: nothing of this process's loaders in it.
        out = subprocess.run([sys.executable, __file__, "--resume", file.name], capture_output=True, text=True,
                             timeout=120)
    if out.returncode:
        sys.exit(f"the resuming interpreter failed:\n{out.stderr[-3000:]}")
    out = out.stdout
    results = json.loads(out.strip().splitlines()[-1])
    for name, (same, of) in results.items():
        print(f"{name}: {same} of {of} resumed batches as uninterrupted")
        print(f"metric {name}={same}")
    plain = {name: r for name, r in results.items() if not name.endswith("_epoch_set")}
    epoch_set = {name: r for name, r in results.items() if name.endswith("_epoch_set")}
    wrong = [name for name, (same, of) in plain.items() if same < of]
    right = [name for name, (same, of) in epoch_set.items() if same == of]
    print(f"metric resumed_in_another_order={len(wrong)}\nmetric resumed_right_with_epoch_set={len(right)}")
    print(f"without the epoch set, {len(wrong)} of {len(plain)} loaders resumed epoch 1 in another order (all but "
          f"torchdata's own); with it, {len(right)} of {len(epoch_set)} in its own (not Accelerate's default sampler)")

if __name__ == "__main__":
    child(sys.argv[2]) if sys.argv[1:2] == ["--resume"] else main()
