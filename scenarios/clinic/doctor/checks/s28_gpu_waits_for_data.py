"""28 · the GPU waits for data: the step time is the sum of loading and training, not their maximum."""
import sys

from scenarios.clinic.doctor.findings import finder

SCENARIO = "28"
FIXES = {
    "gpu-waits-for-data": "num_workers > 0 with pin_memory=True, and the next batch copied on a side stream while "
                          "the step runs: fixes/cuda_prefetch.py (for batch in on_device(loader))",
}
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = "read from the setup, no chance in it: {loaders}"
_found = finder(SCENARIO, FIXES)


def static(examined):
    torch = sys.modules.get("torch")
    # Only where this process already uses CUDA (examine(loader) in a training notebook): asking
    # torch.cuda.is_initialized() initialises nothing.
    if torch is None or not torch.cuda.is_initialized():
        return []
    setup = examined.setup
    if setup.num_workers or setup.pin_memory:
        return []
    return [_found("note", "gpu-waits-for-data",
                   "this process uses CUDA and the loader has num_workers=0 and no pinned memory: every batch is "
                   "built and copied while the GPU waits, so each step takes loading plus training")]
