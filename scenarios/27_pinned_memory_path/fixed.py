"""Scenario 27, fixed: CPU batches, pinned by the loader, copied to the GPU without waiting.

    make scenario-27        # needs a CUDA GPU; elsewhere it says so and exits 3

Pinning is for CPU batches: the pin-memory thread copies each batch into page-locked host
memory, from which the GPU copies it fast and without the CPU waiting.  A batch already on
the GPU cannot be pinned: "cannot pin 'torch.cuda.FloatTensor' only dense CPU tensors can be
pinned", under "Caught RuntimeError in pin memory thread for device 0.".
"""
import torch
from torch.utils.data import DataLoader, Dataset, default_collate

from scenarios.host import cannot_run, cuda_problem_here

SAMPLES, FEATURES = 512, 256


class Features(Dataset):
    def __init__(self):
        self.rows = torch.randn(SAMPLES, FEATURES, generator=torch.Generator().manual_seed(0))

    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        return self.rows[index]


def collate_batch(samples):
    return default_collate(samples)  # FIX: a CPU batch; the loop moves it once it is pinned


def main():
    if problem := cuda_problem_here():
        cannot_run(problem)
    model = torch.nn.Linear(FEATURES, 10).cuda()
    loader = DataLoader(Features(), batch_size=64, num_workers=2, multiprocessing_context="spawn",
                        collate_fn=collate_batch, pin_memory=True)
    outputs, pinned = [], 0
    for batch in loader:
        pinned += batch.is_pinned()
        batch = batch.to("cuda", non_blocking=True)
        outputs.append(model(batch).sum().to("cpu", non_blocking=True))
    torch.cuda.synchronize()  # the copies back to the host are done before they are read
    total = sum(float(o) for o in outputs)
    print(f"metric pinned_batches={pinned}")
    print(f"trained on {len(outputs)} batches, {pinned} of them pinned; sum of outputs {total:.3f}")


if __name__ == "__main__":
    main()
