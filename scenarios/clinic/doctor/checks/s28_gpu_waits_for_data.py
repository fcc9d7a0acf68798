"""28 · the GPU waits for data: the step time is the sum of loading and training, not their maximum."""
import re
import sys

from scenarios.clinic.doctor import waits
from scenarios.clinic.doctor.findings import finder, text_finder

SCENARIO = "28"
FIXES = {
    "gpu-waits-for-data": "num_workers > 0 with pin_memory=True, and the next batch copied on a side stream while "
                          "the step runs: fixes/cuda_prefetch.py (for batch in on_device(loader))",
}
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = "read from the setup, no chance in it: {loaders}"
_found = finder(SCENARIO, FIXES)
_SHARE = 0.5   # of the step or the profiled time: the loop waited for its batches more than it did anything else


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
    """A loop that waits for its batches (waits.loop_waits) where the text speaks of no slow store and shows
    num_workers=0 (the single-process iterator profiled, or the setting printed: *likely*), or shows only a GPU's
    low figure told with words about waiting (28's own symptom: *possible*, with the question); 07 takes the rest.
    Lightning's few-workers warning, where nothing shows a wait."""
    wait = waits.loop_waits(lines, _SHARE)
    if wait is not None:
        return [_waits(wait)] if not wait.storage and (wait.no_workers or wait.kind == "gpu") else []
    line = next((line for line in lines if _LIGHTNING_FEW_WORKERS.search(line)), None)
    if line is None:
        return []
    return [_read("possible", "gpu-waits-for-data", line.strip()[:200],
                  "Lightning warns whenever num_workers is below the cores, a bottleneck or not; does the step "
                  "wait for data (the data time against the step's, or the GPU's use)?")]


def _waits(wait):
    if wait.kind != "gpu" and wait.no_workers:
        shown = "the profiled iterator is the single-process one" if wait.single_process else "num_workers=0"
        return _read("likely", "gpu-waits-for-data", wait.evidence, f"{shown}: the loop builds each batch itself and "
                     "waits for it; workers would build the next while the step runs, whatever the loading does "
                     "(reads from a remote store, 07, need them too)")
    shown = "num_workers=0 in the text; " if wait.no_workers else ""
    return _read("possible", "gpu-waits-for-data", wait.evidence,
                 shown + "is it the loader the GPU waits for? " + waits.WAITS_QUESTION)
