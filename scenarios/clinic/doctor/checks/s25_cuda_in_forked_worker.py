"""25 · CUDA asked for in a forked worker: a child of a process that used CUDA cannot use it again."""
from scenarios.clinic.doctor import events
from scenarios.clinic.doctor.findings import finder

SCENARIO = "25"
_ON_CPU = ("keep the dataset, collate_fn and worker_init_fn on the CPU and move each batch to the GPU in the "
           "training loop: DataLoader(..., pin_memory=True) and batch.to('cuda', non_blocking=True)")
FIXES = {
    "cuda-in-forked-worker": _ON_CPU + "; spawn instead of fork runs, but costs a CUDA context per worker "
                                       "(scenario 26)",
    "cuda-tensor-in-dataset": "load what the dataset holds onto the CPU (torch.load(path, map_location='cpu'), "
                              "tensor.cpu() before the DataLoader starts); " + _ON_CPU,
    "cuda-in-loader-code": _ON_CPU,
}
# torch's own words (torch/cuda/__init__.py's _lazy_init; the CUDA runtime's cudaErrorInitializationError,
# a torch.AcceleratorError from torch 2.8, a RuntimeError before: matched on the text, not the class).
ERRORS = [(r"Cannot re-initialize CUDA in forked subprocess", "cuda-in-forked-worker"),
          (r"CUDA error: initialization error", "cuda-tensor-in-dataset"),
          # the loader's code asked for CUDA on a machine without it (the doctor's probe on a CPU machine)
          (r"Torch not compiled with CUDA enabled|Found no NVIDIA driver on your system", "cuda-in-loader-code")]
# torch.cuda's lazy init raises it in any process forked after its parent initialised CUDA: the
# lesson (no CUDA in a forked child, or spawn it) is the same whoever forked, a DataLoader or a Pool.
LIKELY = [(r"(?i)Cannot re-initialize CUDA in forked subprocess", "cuda-in-forked-worker",
           "torch.cuda raises this in any process forked after its parent initialised CUDA; the child must not "
           "touch CUDA, or must be spawned, whoever forked it")]
# A worker's CUDA error is the GPU's, whatever else the traceback says (a worker dying after it: 06).
WINS_OVER = ("*",)
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = ("CUDA requests the probe records and CUDA tensors on the dataset, no chance in them: {loaders}, none on a"
           " GPU")
_found = finder(SCENARIO, FIXES)


def static(examined):
    held = examined.found("device-tensor")
    if not (held and examined.workers):
        return []
    path, tensor = held[0]
    more = f" (and {len(held) - 1} more)" if len(held) > 1 else ""
    if examined.forked:
        return [_found("risk", "cuda-tensor-in-dataset",
                       f"{path} is a tensor on {tensor.device}{more} and the workers fork: a worker that reads it "
                       "fails with 'CUDA error: initialization error' (a torch.load without map_location puts "
                       "a tensor saved from the GPU back on it)")]
    return [_found("risk", "cuda-tensor-in-dataset",
                   f"{path} is a tensor on {tensor.device}{more}: each {examined.setup.start_method} worker "
                   "receives it through CUDA's own sharing and opens a CUDA context of its own (scenario 26)")]


def measured(examined, probe):
    asked = probe.first(events.CUDA_REQUESTS)
    if not (asked and asked.get("requests") and examined.forked):
        return []
    return [_found("risk", "cuda-in-forked-worker",
                   "; ".join(r["text"] for r in asked["requests"][:3])
                   + ": under fork, once the training process has used CUDA (a model on the GPU), a worker's first "
                     "CUDA call fails with 'Cannot re-initialize CUDA in forked subprocess' (the probe ran it on "
                     "the CPU and never initialised CUDA)")]
