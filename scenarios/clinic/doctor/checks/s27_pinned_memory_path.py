"""27 · the pinned-memory path: pin_memory=True pins CPU batches only; a CUDA batch cannot be pinned."""
from scenarios.clinic.doctor import events
from scenarios.clinic.doctor.findings import finder

SCENARIO = "27"
FIXES = {
    "pin-thread-error": "read the pin memory thread's own error (under \"Original Traceback\", or the \"Exception in "
                        "thread\" traceback before \"exited unexpectedly\"): the thread pins every batch the "
                        "workers deliver, so a batch it cannot pin (a CUDA tensor, a custom type without "
                        "pin_memory()) or a CUDA error while pinning ends the loop; return CPU tensors, and give a "
                        "custom batch a pin_memory() method",
    "pin-cuda-batch": "let the dataset and collate_fn return CPU tensors, keep pin_memory=True, and move the batch "
                      "with batch.to('cuda', non_blocking=True) in the training loop",
}
# torch's pin_memory on a tensor already on the GPU; then any error of the pin memory thread, which
# torch wraps as "Caught RuntimeError in pin memory thread for device 0." (_utils/pin_memory.py), or
# the thread's death, which the training process reports without the cause (dataloader.py).
ERRORS = [(r"cannot pin 'torch\.cuda\.\w+' only dense CPU tensors can be pinned", "pin-cuda-batch"),
          (r"in pin memory thread for device \d+|Pin memory thread exited unexpectedly", "pin-thread-error")]
# A pin thread's error wraps the batch's own CUDA error (25's, 26's texts): it is the pin thread's lesson;
# and a worker's CUDA error is the GPU's, whatever else the traceback says ("*").
WINS_OVER = ("*", "25", "26")
# How often healthy loaders and jobs trip each rule; the {fields} are filled from recorded runs (doctor/healthy.py).
HEALTHY = "CUDA requests the probe records, no chance in them: {loaders}, none on a GPU"
_found = finder(SCENARIO, FIXES)


def measured(examined, probe):
    asked = probe.first(events.CUDA_REQUESTS)
    if not (asked and asked.get("batch_on_cuda") and examined.setup.pin_memory):
        return []
    return [_found("risk", "pin-cuda-batch",
                   "; ".join(r["text"] for r in asked["requests"][:2])
                   + ": the batch would be a CUDA tensor and pin_memory=True pins batches, so the first batch "
                     "fails with \"cannot pin 'torch.cuda.FloatTensor' only dense CPU tensors can be pinned\"")]
