"""28 · the GPU waits for data: the step time is the sum of loading and training, not their maximum."""
import re
import sys

from scenarios.clinic.doctor import printed
from scenarios.clinic.doctor.findings import finder, text_finder

SCENARIO = "28"
FIXES = {
    "gpu-waits-for-data": "num_workers > 0 with pin_memory=True, and the next batch copied on a side stream while "
                          "the step runs: fixes/cuda_prefetch.py (for batch in on_device(loader))",
}
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = "read from the setup, no chance in it: {loaders}"
_found = finder(SCENARIO, FIXES)
_PROFILED_SHARE = 0.5   # of the profiled time: the loop waited for its batches more than it did anything else


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


# Lightning's warning for a loader with fewer workers than cores: advice it gives whether or not loading is the
# bottleneck.
_LIGHTNING_FEW_WORKERS = re.compile(r"does not have many workers which may be a bottleneck")
_read = text_finder(SCENARIO, FIXES, __doc__)


def pasted(lines, raw):
    """A profile whose time is mostly a single-process loader's __next__ (the loop builds each batch itself and
    waits for it, whatever the loading does); a GPU low with words about waiting for data and none about a slow
    store; Lightning's few-workers warning."""
    found = printed.profiler_share(lines)
    if found and found[0] >= _PROFILED_SHARE and found[2] == "_SingleProcess":
        share, row, _ = found
        return [_read("likely", "gpu-waits-for-data", f"{share:.0%} of the profiled time is the loader's __next__: "
                      f"{row}", "the loop builds each batch itself (num_workers=0) and waits for it: workers would "
                      "build the next while the step runs, whatever the loading does (reads from a remote store, 07, "
                      "need them too)")]
    waiting = printed.gpu_waiting(lines)
    if waiting and not waiting[2]:
        return [_read("possible", "gpu-waits-for-data", f"the GPU at {waiting[0]:g} %, with words about waiting for "
                      f"data: {waiting[1]}", "is it the loader the GPU waits for? " + printed.WAITS_QUESTION)]
    line = next((line for line in lines if _LIGHTNING_FEW_WORKERS.search(line)), None)
    if line is None:
        return []
    return [_read("possible", "gpu-waits-for-data", line.strip()[:200],
                  "Lightning warns whenever num_workers is below the cores, a bottleneck or not; does the step "
                  "wait for data (the data time against the step's, or the GPU's use)?")]
