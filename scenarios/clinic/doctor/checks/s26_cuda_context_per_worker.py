"""26 · CUDA in spawn or forkserver workers: a CUDA context, and its GPU memory, in every worker."""
from scenarios.clinic.doctor import events
from scenarios.clinic.doctor.findings import finder

SCENARIO = "26"
FIXES = {
    "cuda-context-per-worker": "no CUDA in the workers (no torch.cuda.set_device in worker_init_fn, no device='cuda' "
                               "in __getitem__): return CPU tensors with pin_memory=True and do GPU work "
                               "(augmentation, normalisation) on the whole batch in the training process",
    "cuda-tensors-from-workers": "return CPU tensors from the workers (pin_memory=True) and move the batch to the "
                                 "GPU in the training loop; a CUDA tensor a worker made must outlive its use there",
}
# A worker's own CUDA context does not fit beside the model: the CUDA runtime's out-of-memory error,
# caught in a worker (a model's own out-of-memory in forward is no DataLoader failure).
ERRORS = [(r"(?s)in DataLoader worker process \d+\..*(?:CUDA error: out of memory|CUDA out of memory)",
           "cuda-context-per-worker")]
# torch/csrc/CudaIPCTypes.cpp: a worker that made CUDA tensors the training process still held exited.
LOG_TEXTS = [(r"Producer process has been terminated before all shared CUDA tensors released",
              "cuda-tensors-from-workers")]
# A worker's CUDA error is the GPU's, whatever else the traceback says (10's "out of memory").
WINS_OVER = ("*",)
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = "CUDA requests the probe records, no chance in them: {loaders}, none on a GPU"
_found = finder(SCENARIO, FIXES)


def measured(examined, probe):
    asked = probe.first(events.CUDA_REQUESTS)
    method = examined.setup.start_method
    if not (asked and asked.get("requests") and examined.workers and method in ("spawn", "forkserver")):
        return []
    return [_found("risk", "cuda-context-per-worker",
                   "; ".join(r["text"] for r in asked["requests"][:3])
                   + f": each of the {examined.workers} {method} workers opens a CUDA context of its own, GPU "
                     "memory the model cannot use (518 MiB per worker for torch.cuda.set_device alone, 612 MiB "
                     "with a tensor, on an H200 with torch 2.11; the probe ran it on the CPU)")]
